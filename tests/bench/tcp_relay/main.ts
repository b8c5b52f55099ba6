/**
 * TCP relay throughput: iperf3 straight to its server, through proxy/tcp/relay.ts (a Deno process), and
 * through socat (a C relay) for scale. `./dev deno run -A tests/bench/tcp_relay/main.ts [seconds=5]`;
 * needs iperf3 and socat. Prints one JSON line (Gbit/s per target, relay/direct ratio).
 *
 * @module
 */
import { freePort } from "../../../shared/internal/testing/free_port.ts";

const seconds = Number(Deno.args[0] ?? 5);

async function iperf(port: number): Promise<number> {
  const out = await new Deno.Command("iperf3", {
    args: ["-c", "127.0.0.1", "-p", String(port), "-t", String(seconds), "-J"],
    stdout: "piped",
  }).output();
  const report = JSON.parse(new TextDecoder().decode(out.stdout));
  return Math.round(report.end.sum_received.bits_per_second / 1e7) / 100;
}

/** Starts `cmd` and waits for `ready` on its stdout (or a fixed pause when `ready` is null). */
async function start(cmd: string, args: string[], ready: string | null): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(cmd, { args, stdout: "piped", stderr: "inherit" }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  if (ready === null) {
    await new Promise((r) => setTimeout(r, 500));
  } else {
    let seen = "";
    while (!seen.includes(ready)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${cmd} exited before it was ready`);
      seen += value;
    }
  }
  void (async () => {
    while (!(await reader.read()).done);
  })();
  return child;
}

async function stop(child: Deno.ChildProcess): Promise<void> {
  child.kill("SIGTERM");
  await child.status;
}

const serverPort = freePort();
const iperfServer = await start(
  "iperf3",
  ["-s", "--forceflush", "-B", "127.0.0.1", "-p", String(serverPort)],
  "Server listening",
);
console.error("direct");
const direct = await iperf(serverPort);
console.error("relay");
const relayPort = freePort();
const relayProcess = await start(
  Deno.execPath(),
  [
    "run",
    "-A",
    new URL("./relay_process.ts", import.meta.url).pathname,
    String(relayPort),
    String(serverPort),
  ],
  "ready",
);
const viaRelay = await iperf(relayPort);
await stop(relayProcess);
const socatPort = freePort();
const socat = await start(
  "socat",
  [`TCP-LISTEN:${socatPort},bind=127.0.0.1,reuseaddr,fork`, `TCP:127.0.0.1:${serverPort}`],
  null,
);
console.error("socat");
const viaSocat = await iperf(socatPort);
await stop(socat);
await stop(iperfServer);
console.log(JSON.stringify({
  seconds,
  gbit_per_s: { direct, relay: viaRelay, socat: viaSocat },
  relay_over_direct: Math.round((viaRelay / direct) * 100) / 100,
  relay_over_socat: Math.round((viaRelay / viaSocat) * 100) / 100,
}));
