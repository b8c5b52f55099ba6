/**
 * Micro-benchmark of the HTTP/2 codec (shared/internal/http2/): h2load (nghttp2-client) against the codec's echo
 * server (`shared/internal/http2/echo_test_support.ts`, h2c, one process, one thread), small requests. Prints
 * requests per second (h2load's), the server's CPU time per request (/proc utime + stime) and the
 * bytes the server's JavaScript heap allocated per request, estimated from V8's `--trace-gc` lines
 * (the sum over collections of "size before" minus the previous "size after").
 *
 * Runs, each against a fresh server after a warm-up of 20,000 requests: `get` (GET /, 10 octets of
 * body back), `post` (POST of 1 KiB, echoed), `minimal` (GET answered 204 with END_STREAM on the
 * HEADERS, no body, no handler work: the codec and the socket layer alone); `idle` (not by default):
 * 1,000 connections that each made one request and stay open, the server's JS heap in use after a
 * full collection before and after, per connection.
 *
 * Run: ./dev deno run -A tests/bench/h2_codec_bench.ts [--n 100000] [--c 4] [--m 10] [get|post|minimal|idle ...]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { bodyText, connectClient, get } from "../../shared/internal/http2/connection_test_support.ts";
import type { Http2Connection } from "../../shared/internal/http2/connection.ts";

const SERVER = new URL("../../shared/internal/http2/echo_test_support.ts", import.meta.url).pathname;

/** V8 `--trace-gc` line: "... Scavenge 5.2 (6.0) -> 4.5 (7.0) MB, ...". */
const GC_LINE =
  /(Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Sweep)[^\d]*([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/;

class GcTotals {
  allocatedMb = 0;
  collections = 0;
  #lastAfter = -1;
  feed(text: string): void {
    for (const line of text.split("\n")) {
      const m = GC_LINE.exec(line);
      if (!m) continue;
      const before = Number(m[2]);
      const after = Number(m[3]);
      if (this.#lastAfter >= 0) this.allocatedMb += Math.max(0, before - this.#lastAfter);
      this.#lastAfter = after;
      this.collections++;
    }
  }
}

function cpuTicks(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
}

async function h2load(args: string[]): Promise<string> {
  const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: {
    n: { type: "string", default: "100000" },
    c: { type: "string", default: "4" },
    m: { type: "string", default: "10" },
  },
  allowPositionals: true,
});
const runs = positionals.length > 0 ? positionals : ["get", "post", "minimal"];
const body = await Deno.makeTempFile();
await Deno.writeFile(body, new Uint8Array(1024).fill(0x61));
try {
  for (const run of runs) await (run === "idle" ? measureIdle() : measure(run));
} finally {
  await Deno.remove(body);
}

/** One run against a fresh server process. */
async function measure(run: string): Promise<void> {
  const port = freePort();
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--trace-gc",
      SERVER,
      String(port),
      ...(run === "minimal" ? ["--minimal"] : []),
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const gc = new GcTotals();
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of server.stdout) gc.feed(decoder.decode(chunk));
  })();
  try {
    for (let i = 0; i < 50; i++) {
      if ((await h2load(["-n", "1", `http://127.0.0.1:${port}/`])).includes("1 succeeded")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const extra = run === "post" ? ["-d", body] : [];
    const base = [...extra, "-c", values.c!, "-m", values.m!, `http://127.0.0.1:${port}/`];
    await h2load(["-n", "20000", ...base]);
    const mb0 = gc.allocatedMb;
    const cpu0 = cpuTicks(server.pid);
    const out = await h2load(["-n", values.n!, ...base]);
    await new Promise((r) => setTimeout(r, 200)); // the last GC lines
    const n = Number(values.n);
    const rps = /finished in [^,]+, ([\d.]+) req\/s/.exec(out)?.[1] ?? "?";
    const ok = /(\d+) succeeded/.exec(out)?.[1] ?? "?";
    const cpuUs = ((cpuTicks(server.pid) - cpu0) * 10_000) / n;
    const bytes = ((gc.allocatedMb - mb0) * 1024 * 1024) / n;
    console.log(
      `${run}: ${n} requests (${ok} succeeded), -c ${values.c} -m ${values.m}: ${rps} req/s, ` +
        `server CPU ${cpuUs.toFixed(1)} µs/request, heap allocated ~${Math.round(bytes)} B/request`,
    );
  } finally {
    server.kill();
    await server.status;
    await reading;
  }
}

/** The JS heap an idle connection keeps on the server (after one request each). */
async function measureIdle(n = 1000): Promise<void> {
  const port = freePort();
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", SERVER, String(port)],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const heap = async (): Promise<number> => {
    Deno.kill(server.pid, "SIGUSR2");
    const { value } = await lines.read();
    return Number(/heap (\d+)/.exec(value ?? "")?.[1] ?? NaN);
  };
  const conns: Http2Connection[] = [];
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const before = await heap();
    for (let i = 0; i < n; i++) {
      const { conn } = await connectClient(port);
      await bodyText(conn.request(get("/"), { endStream: true }));
      conns.push(conn);
    }
    await new Promise((r) => setTimeout(r, 300));
    const after = await heap();
    console.log(
      `idle: ${n} connections after one request each: server JS heap ${(before / 1048576).toFixed(1)} -> ` +
        `${(after / 1048576).toFixed(1)} MiB, ~${Math.round((after - before) / n)} B per connection`,
    );
  } finally {
    for (const c of conns) c.close();
    await Promise.all(conns.map((c) => c.closed));
    server.kill();
    await server.status;
  }
}
