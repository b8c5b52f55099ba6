/**
 * Slow-client benchmark with Debian's slowhttptest, at the proxy's default limits (or the ones given):
 * the proxy's worker pool (the listeners the `proxy` program runs, two workers, inbound listener in
 * PERMISSIVE mode) in front of the real httpbin (python3-httpbin under gunicorn, gthread, 8 threads).
 * For each attack it runs slowhttptest with `-g` and prints, from its CSV, how many connections were
 * open each second and whether its probe found the service available, plus real curl requests made
 * once a second during the attack (status and time, 3 s timeout) and three right after it, and the
 * proxy's limit counters.
 *
 * Attacks (slowhttptest modes):
 * - `headers`: slowloris (`-H`): 1,000 connections, a header line every 5 s;
 * - `body`: R-U-Dead-Yet (`-B`): 1,000 POSTs with Content-Length 8192, 10 body bytes every 5 s;
 * - `read`: slow read (`-X`): 1,000 connections reading the response 5 bytes a second with a small window.
 *
 * slowhttptest opens its 1,000 connections once (200 a second) and does not replace those the proxy
 * closes, so a timeout shows as the second from which the service is available again. With
 * `--requestTimeout` set (off by default, as in Envoy), the `body` attack shows what it bounds:
 *   ./dev deno run -A tests/bench/slowloris_bench.ts --requestTimeout 10s body
 *
 * Run (as root, `apt-get install -y slowhttptest python3-httpbin gunicorn`):
 *   ./dev deno run -A tests/bench/slowloris_bench.ts [--seconds 40] [--requestHeadersTimeout 10s]
 *     [--requestTimeout 0s] [--idleTimeout 5m0s] [--maxConnections 10000] [headers|body|read ...]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { Httpbin } from "../../proxy/inbound/test_support.ts";
import { snapshotOf } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { ProxyLogger, uniformLevels } from "../../proxy/logging/logger.ts";
import { validateLimitFlags } from "../../proxy/options/limit_flags.ts";
import { WorkerPool } from "../../proxy/workers/pool.ts";

/** slowhttptest's arguments and the httpbin path of each attack (a slow body needs one that takes POST). */
const ATTACKS = {
  headers: { args: ["-H", "-i", "5", "-x", "24"], path: "/get" },
  body: { args: ["-B", "-i", "5", "-s", "8192", "-x", "10"], path: "/post" },
  read: { args: ["-X", "-k", "3", "-n", "1", "-w", "16", "-y", "64", "-z", "5"], path: "/get" },
} as const;
type Attack = keyof typeof ATTACKS;

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "40" },
    requestHeadersTimeout: { type: "string" },
    requestTimeout: { type: "string" },
    idleTimeout: { type: "string" },
    maxConnections: { type: "string" },
  },
  allowPositionals: true,
});
const attacks = (positionals.length > 0 ? positionals : Object.keys(ATTACKS)) as Attack[];
for (const a of attacks) {
  if (!(a in ATTACKS)) throw new Error(`unknown attack ${a}; use ${Object.keys(ATTACKS)}`);
}
const errors: string[] = [];
const limits = validateLimitFlags(
  (name) =>
    values[name as keyof typeof values] ??
      {
        requestHeadersTimeout: "10s",
        requestTimeout: "0s",
        idleTimeout: "5m0s",
        maxConnections: "10000",
      }[name],
  (name, value, reason) => errors.push(`--${name}: ${value} ${reason}`),
);
if (errors.length > 0) throw new Error(errors.join("\n"));
const seconds = Number(values.seconds);

async function curlOnce(url: string): Promise<string> {
  const r = await new Deno.Command("curl", {
    args: ["-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}/%{time_total}s", url],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(r.stdout);
}

/** slowhttptest's CSV: `Seconds,Closed,Pending,Connected,Service Available` (the last is 0 when its probe failed). */
function summarize(csv: string): { second: number; closed: number; connected: number; available: boolean }[] {
  return csv.trim().split("\n").slice(1).map((line) => {
    const [s, closed, , connected, available] = line.split(",");
    return {
      second: Number(s),
      closed: Number(closed),
      connected: Number(connected),
      available: Number(available) > 0,
    };
  });
}

const httpbin = await Httpbin.start();
const port = freePort();
const pool = new WorkerPool({
  size: 2,
  listeners: [{ address: "127.0.0.1", port, appAddress: "127.0.0.1", appPort: httpbin.port }],
  levels: uniformLevels("error"),
  log: new ProxyLogger(uniformLevels("error")).scope("workers"),
  connectionLimits: limits,
});
const dir = await Deno.makeTempDir({ prefix: "slowloris-bench-" });
try {
  await pool.start(snapshotOf("PERMISSIVE", undefined));
  const url = `http://127.0.0.1:${port}/get`;
  console.error(`limits ${JSON.stringify(limits)}; httpbin behind 127.0.0.1:${port}`);
  for (const attack of attacks) {
    const before = await pool.counters();
    const probes: string[] = [];
    let running = true;
    const prober = (async () => {
      while (running) {
        probes.push(await curlOnce(url));
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    const prefix = `${dir}/${attack}`;
    const out = await new Deno.Command("slowhttptest", {
      args: [
        ...ATTACKS[attack].args,
        "-c",
        "1000",
        "-r",
        "200",
        "-l",
        String(seconds),
        "-p",
        "3",
        "-g",
        "-o",
        prefix,
        "-u",
        `http://127.0.0.1:${port}${ATTACKS[attack].path}`,
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    running = false;
    await prober;
    // slowhttptest stops once the proxy closed all its connections: is httpbin serving again?
    const afterwards: string[] = [];
    for (let i = 0; i < 3; i++) afterwards.push(await curlOnce(url));
    const rows = summarize(await Deno.readTextFile(`${prefix}.csv`));
    const after = await pool.counters();
    const counter = (name: string) =>
      after.reduce((n, w) => n + w.listeners[0].counters[name], 0) -
      before.reduce((n, w) => n + w.listeners[0].counters[name], 0);
    const unavailable = rows.filter((r) => !r.available).map((r) => r.second);
    console.log(JSON.stringify({
      attack,
      request_timeout_ms: limits.requestTimeoutMs,
      slowhttptest_exit: out.code,
      max_connected: Math.max(...rows.map((r) => r.connected)),
      connected_by_second: rows.filter((r) => r.second % 5 === 0).map((r) => `${r.second}s:${r.connected}`),
      probe_unavailable_seconds: unavailable,
      available_from_second: unavailable.length === 0 ? 0 : Math.max(...unavailable) + 1,
      available_at_end: rows.length > 0 && rows[rows.length - 1].available,
      curl_200: `${probes.filter((p) => p.startsWith("200/")).length}/${probes.length}`,
      curl: probes,
      curl_after_attack: afterwards,
      downstream_rq_header_timeout: counter("downstream_rq_header_timeout"),
      downstream_rq_timeout: counter("downstream_rq_timeout"),
      downstream_cx_idle_timeout: counter("downstream_cx_idle_timeout"),
      downstream_cx_overflow: counter("downstream_cx_overflow"),
    }));
  }
} finally {
  await pool.close();
  await httpbin.stop();
  await Deno.remove(dir, { recursive: true });
}
