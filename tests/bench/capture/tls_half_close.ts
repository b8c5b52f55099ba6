/**
 * Half-close through the outbound listener, plain text and over mutual TLS: the client (python3)
 * sends `size` bytes, shuts its write side, and reads until EOF, through the outbound listener
 * (proxy/outbound/capture_test_support.ts) to an echo that ends its side when it reads the end.
 * Deno 2.9's node:tls loses the peer's FIN on a TLSSocket that was ever `pause()`d; before
 * proxy/tcp/relay.ts paused TLS sockets under the TLS layer, 1-2 of 10 MiB-sized round trips over
 * mutual TLS hung (all bytes back, no FIN). Prints, per size, how many of `--rounds` round trips
 * ended cleanly.
 *
 *   ./dev deno run -A tests/bench/capture/tls_half_close.ts [--rounds 10]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { captureNetns, roundTrip } from "../../../proxy/capture/netns_test_support.ts";
import { ALLOW_FFI_FLAG } from "../../../proxy/capture/libc.ts";

const { values } = parseArgs({ args: Deno.args, options: { rounds: { type: "string", default: "10" } } });
const rounds = Number(values.rounds);
const support = new URL("../../../proxy/outbound/capture_test_support.ts", import.meta.url).pathname;
const ns = await captureNetns(9, 15001, 1337);
const child = new Deno.Command("ip", {
  args: [
    ...ns.exec.slice(1),
    "setpriv",
    "--regid=1337",
    "--clear-groups",
    Deno.execPath(),
    "run",
    "--allow-net",
    ALLOW_FFI_FLAG,
    support,
    "9",
  ],
  stdin: "piped",
  stdout: "piped",
  stderr: "null",
}).spawn();
try {
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  await lines.read();
  for (const [what, vip] of [["plain text", "10.221.9.10"], ["mutual TLS", "10.221.9.12"]]) {
    for (const size of [1000, 65536, 1 << 20, 2 << 20]) {
      let clean = 0, allBytes = 0;
      for (let i = 0; i < rounds; i++) {
        const r = await roundTrip(ns.exec, vip, 9000, size);
        if (r.error === null && r.same) clean++;
        if (r.got === size) allBytes++;
      }
      console.log(
        `${what} ${size} bytes: ${clean}/${rounds} ended cleanly, ${allBytes}/${rounds} got every byte back`,
      );
    }
  }
  lines.releaseLock();
} finally {
  child.kill("SIGKILL");
  await child.status;
  await child.stdout.cancel().catch(() => {});
  await ns.remove();
}
