/**
 * A/B of the proxy pair's CPU per request (issue 17, item 2): two mesh pairs in one run, one running
 * the `proxy` program of another checkout (`base`, e.g. a worktree of main) and one this checkout's
 * (`new`), loaded in turn (base, new, new, base, ...) at the same fixed rate, so that contention on a
 * shared machine falls on both alike. CPU seconds per request = client + server proxy utime+stime
 * (/proc/<pid>/stat) over the requests answered in that load. Throughput is not reported (noise on a
 * shared machine); hey's p50 and p99 of each load are, as the median round per side (`latency_ms`), since
 * loads interleaved in one run see the same contention.
 *
 * Run: ./dev deno run -A tests/bench/proxy_ab/main.ts <base checkout> [rounds=8] [seconds=3] [rate=3000]
 * Env: AB_BASE_V8 / AB_NEW_V8 replace each pair's --v8-flags (default: the `proxy` task's);
 * AB_POST_BYTES=<n> makes the load POST a body of n bytes (Content-Length) instead of GET;
 * AB_BASE_MESH_TLS / AB_NEW_MESH_TLS=<deno|node> give each client proxy's --meshTlsClient;
 * AB_CONNS=<n> is hey's connection count (default 20; 16 with rate 1000 and AB_POST_BYTES=1024 is
 * proxy_pair's latency load).
 *
 * @module
 */
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { join } from "node:path";
import {
  BenchRun,
  cpuSeconds,
  meshTlsArgs,
  proxyRoot,
  proxyV8Flags,
  run,
  startMeshPair,
} from "../pair_support.ts";

const baseRoot = Deno.args[0];
if (baseRoot === undefined) throw new Error("usage: main.ts <base checkout> [rounds] [seconds] [rate]");
const rounds = Number(Deno.args[1] ?? 8);
const seconds = Number(Deno.args[2] ?? 3);
const rate = Number(Deno.args[3] ?? 3000);
const HOST = "app.foo.svc.cluster.local:8000";
const postBytes = Number(Deno.env.get("AB_POST_BYTES") ?? 0);
const conns = Number(Deno.env.get("AB_CONNS") ?? 20);

interface Pair {
  tag: "base" | "new";
  bench: BenchRun;
  url: string;
  pids: number[];
}

async function startPair(tag: Pair["tag"], appPort: number): Promise<Pair> {
  const bench = await BenchRun.start(`proxy-ab-${tag}-`);
  if (tag === "base") {
    // The same bench harness, the other checkout's proxy program.
    const spawn = bench.spawn.bind(bench);
    const ours = join(proxyRoot(), "proxy/main.ts");
    const theirs = join(baseRoot, "proxy/main.ts");
    bench.spawn = (cmd, args, env) => spawn(cmd, args.map((a) => a === ours ? theirs : a), env);
  }
  const v8 = Deno.env.get(tag === "base" ? "AB_BASE_V8" : "AB_NEW_V8") ?? proxyV8Flags();
  const p = await startMeshPair(
    bench,
    [{ name: "http", number: 8000, targetPort: freePort(), protocol: "HTTP", appPort }],
    {
      concurrency: 1,
      v8Flags: v8,
      clientArgs: meshTlsArgs(Deno.env.get(tag === "base" ? "AB_BASE_MESH_TLS" : "AB_NEW_MESH_TLS")),
    },
  );
  return {
    tag,
    bench,
    url: `http://127.0.0.1:${p.outboundPort}/`,
    pids: [p.clientProxy.pid, p.serverProxy.pid],
  };
}

/** One load's answers and hey's latency percentiles (ms). */
interface Load {
  n: number;
  p50: number;
  p99: number;
}

/** hey's `NN% in S secs` line as ms (NaN when absent). */
function percentileMs(out: string, pct: number): number {
  const m = out.match(new RegExp(`\\s${pct}%\\s+in\\s+([\\d.]+)\\s+secs`));
  return m === null ? NaN : Math.round(Number(m[1]) * 1e5) / 100;
}

/**
 * A fixed-rate load (hey, AB_CONNS connections; GET, or POST with AB_POST_BYTES): the 200 answers
 * counted, and hey's p50 and p99.
 */
async function load(url: string, secs: number, bodyFile: string | null): Promise<Load> {
  const post = bodyFile === null ? [] : ["-m", "POST", "-D", bodyFile];
  const out = await run("hey", [
    "-z",
    `${secs}s`,
    "-c",
    String(conns),
    "-q",
    String(rate / conns),
    ...post,
    "-host",
    HOST,
    url,
  ]);
  const codes = [...out.matchAll(/\[(\d+)\]\s+(\d+) responses/g)];
  const other = codes.filter((c) => c[1] !== "200");
  if (other.length > 0) throw new Error(`answers other than 200: ${other.map((c) => c[0]).join(", ")}`);
  const n = codes.reduce((a, c) => a + Number(c[2]), 0);
  return { n, p50: percentileMs(out, 50), p99: percentileMs(out, 99) };
}

const bench = await BenchRun.start("proxy-ab-app-");
const pairs: Pair[] = [];
try {
  const appPort = freePort();
  bench.spawn(Deno.execPath(), [
    "eval",
    // POST echoes its body as proxy_pair's app does: Deno.serve answers `connection: close` when the
    // handler leaves the body unread, and the server proxy would then dial the app for every request.
    `Deno.serve({hostname: "127.0.0.1", port: ${appPort}, onListen() {}}, async (req) =>
       req.method === "POST" ? new Response(await req.arrayBuffer()) : new Response("hello from the app\\n"));`,
  ], { NO_COLOR: "1" });
  pairs.push(await startPair("base", appPort), await startPair("new", appPort));
  let bodyFile: string | null = null;
  if (postBytes > 0) {
    bodyFile = join(bench.dir, "body");
    await Deno.writeFile(bodyFile, new Uint8Array(postBytes).fill(0x61));
  }
  for (const p of pairs) await load(p.url, 1, bodyFile);
  const totals = {
    base: { cpu: 0, n: 0, each: [] as number[], byProxy: [0, 0], p50: [] as number[], p99: [] as number[] },
    new: { cpu: 0, n: 0, each: [] as number[], byProxy: [0, 0], p50: [] as number[], p99: [] as number[] },
  };
  for (let r = 0; r < rounds; r++) {
    for (const p of r % 2 === 0 ? pairs : [...pairs].reverse()) {
      const before = p.pids.map(cpuSeconds);
      const { n, p50, p99 } = await load(p.url, seconds, bodyFile);
      const each = p.pids.map((pid, i) => cpuSeconds(pid) - before[i]);
      const cpu = each[0] + each[1];
      const t = totals[p.tag];
      t.byProxy[0] += each[0];
      t.byProxy[1] += each[1];
      t.cpu += cpu;
      t.n += n;
      t.each.push(cpu / n * 1e6);
      t.p50.push(p50);
      t.p99.push(p99);
      console.error(
        `${p.tag} round ${r}: ${n} requests, ${
          (cpu / n * 1e6).toFixed(1)
        } us/request, p50 ${p50} ms, p99 ${p99} ms`,
      );
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
  const us = (t: typeof totals.base) => ({
    pooled: Math.round(t.cpu / t.n * 1e7) / 10,
    median: Math.round(median(t.each) * 10) / 10,
    requests: t.n,
  });
  const base = us(totals.base), now = us(totals.new);
  // Per proxy: a change to one of them leaves the other as the control of the run's contention.
  const byProxy = (t: typeof totals.base) => ({
    client: Math.round(t.byProxy[0] / t.n * 1e7) / 10,
    server: Math.round(t.byProxy[1] / t.n * 1e7) / 10,
  });
  const baseBy = byProxy(totals.base), newBy = byProxy(totals.new);
  const latency = (t: typeof totals.base) => ({ p50: median(t.p50), p99: median(t.p99) });
  console.log(JSON.stringify({
    bench: "proxy_ab",
    base: baseRoot,
    rounds,
    seconds,
    rate,
    connections: conns,
    post_bytes: postBytes,
    load_average: (await Deno.readTextFile("/proc/loadavg")).trim(),
    latency_ms: { base: latency(totals.base), new: latency(totals.new) },
    cpu_us_per_request: { base, new: now },
    ratio_pooled: Math.round(now.pooled / base.pooled * 1000) / 1000,
    ratio_median: Math.round(now.median / base.median * 1000) / 1000,
    pooled_by_proxy: { base: baseBy, new: newBy },
    ratio_by_proxy: {
      client: Math.round(newBy.client / baseBy.client * 1000) / 1000,
      server: Math.round(newBy.server / baseBy.server * 1000) / 1000,
    },
  }));
} finally {
  for (const p of pairs) await p.bench.close();
  await bench.close();
}
