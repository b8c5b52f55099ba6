/**
 * The codec under hostile peers, at volume (the #36788 question for our own codec): the echo server of
 * shared/internal/http2 in its own process, and `shared/internal/http2/hostile_peer.py` running each case N times in a
 * row (one connection each). Prints per case the connections, the GOAWAY codes the codec sent, whether
 * the server still answered a plain GET, the server's RSS before and after, and its JS heap in use
 * after a full collection (which must not grow with the number of hostile connections: RSS keeps
 * V8's high-water mark). Any death of the server process is reported and ends the run.
 *
 * Run (python3-h2): ./dev deno run -A tests/bench/h2_codec_hostile_stress.ts [--n 1000] [case ...]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { freePort } from "../../shared/internal/testing/free_port.ts";

const SERVER = new URL("../../shared/internal/http2/echo_test_support.ts", import.meta.url).pathname;
const PEER = new URL("../../shared/internal/http2/hostile_peer.py", import.meta.url).pathname;
const DEFAULT_CASES = [
  "goaway-before-settings",
  "goaway-after-settings",
  "goaway-mid-stream",
  "goaway-repeated",
  "goaway-then-frames",
  "goaway-rst-after",
  "rapid-reset",
  "ping-flood",
  "settings-flood",
  "continuation-flood",
  "header-list-too-large",
  "hpack-huffman-garbage",
  "window-update-flood",
  "empty-data-flood",
];

function rssKb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? -1);
}

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: { n: { type: "string", default: "1000" } },
  allowPositionals: true,
});
const cases = positionals.length > 0 ? positionals : DEFAULT_CASES;
const port = freePort();
const server = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "--v8-flags=--expose-gc", SERVER, String(port)],
  stdout: "piped",
  stderr: "null",
}).spawn();
let exited = false;
server.status.then(() => exited = true);
const heapLines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();

/** The server's JS heap in use after a full collection, MiB (it prints it on SIGUSR2). */
async function heapMib(): Promise<string> {
  Deno.kill(server.pid, "SIGUSR2");
  const { value } = await heapLines.read();
  const bytes = Number(/heap (\d+)/.exec(value ?? "")?.[1] ?? NaN);
  return (bytes / 1024 / 1024).toFixed(1);
}
try {
  await new Promise((r) => setTimeout(r, 1500));
  console.log(
    `server at start: RSS ${(rssKb(server.pid) / 1024).toFixed(1)} MiB, heap ${await heapMib()} MiB`,
  );
  for (const name of cases) {
    const before = rssKb(server.pid);
    const out = await new Deno.Command("/usr/bin/python3", {
      args: [PEER, String(port), name, values.n!],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const line = new TextDecoder().decode(out.stdout).trim() || new TextDecoder().decode(out.stderr).trim();
    if (exited) {
      console.log(`${name}: THE SERVER DIED (${JSON.stringify(await server.status)})`);
      break;
    }
    const after = rssKb(server.pid);
    await new Promise((r) => setTimeout(r, 1200)); // the last connections' linger
    console.log(
      `${line} rss_mib ${(before / 1024).toFixed(1)} -> ${
        (after / 1024).toFixed(1)
      } heap_mib ${await heapMib()}`,
    );
  }
} finally {
  if (!exited) server.kill();
  await server.status;
}
