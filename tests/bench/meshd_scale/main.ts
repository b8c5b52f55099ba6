/**
 * Scale benchmark of meshd (issue 17 item 4; README.md beside this file): the real `meshd discovery`
 * in its own process, 1,000 services, and N simulated delta ADS proxies in client processes
 * (client.ts). Measures cold sync (all N connect at once, until each holds its initial config),
 * the convergence of one AuthorizationPolicy change measured at the clients, meshd's own fan-out
 * time from its metrics (disco_push_fanout_time, disco_proxy_queue_time,
 * disco_pushcontext_init_seconds), meshd's CPU seconds and its VmRSS/VmHWM. Prints
 * one JSON line.
 *
 * Run: ./dev deno run -A tests/bench/meshd_scale/main.ts [1k|10k|25k|<n>] [services=1000]
 * Variables: BENCH_MESHD_ROOT (the checkout whose meshd runs; default this one), BENCH_GRPC_TRANSPORT
 * (meshd's --grpcTransport: codec, its default, or children), BENCH_CLIENT (the simulated proxies'
 * HTTP/2 client: codec, the default, or node; client_transport.ts), BENCH_SERVING_CHILDREN (with children;
 * default 0: grpc-js in meshd's process), BENCH_CLIENT_PROCS (default one per 6,250 proxies),
 * BENCH_STREAMS_PER_CONNECTION (default 1000), BENCH_TIMEOUT_S (each phase; default 300),
 * BENCH_PROFILE (a directory for meshd's V8 CPU profile), BENCH_SERVER_ENV ("A=1 B=2" for meshd),
 * BENCH_MESHD_ARGS (more meshd flags, e.g. "--keepaliveTimeout 2m" on a starved machine),
 * BENCH_POLICY_CHANGES (policy changes timed one after another; default 1), BENCH_HEAP_DIR (meshd writes
 * its memory breakdown and heap snapshots there when idle and synced: heap_preload.ts).
 *
 * @module
 */
import { all, type ClientProcess, percentiles, spawnClient } from "./client_process.ts";
import { policy, PROBE_NODE_ID, writeConfig } from "./config.ts";
import { cpuOf, histogram, labelledCounter, memoryOf, type Meshd, startMeshd } from "./meshd_process.ts";
import { TRANSPORTS } from "./client_transport.ts";
import { checkoutCommit, runProvenance } from "../pair_support.ts";

const SIZES: Record<string, number> = { "1k": 1000, "10k": 10_000, "25k": 25_000 };
const clients = SIZES[Deno.args[0] ?? "1k"] ?? Number(Deno.args[0]);
const services = Number(Deno.args[1] ?? 1000);
const env = (name: string, fallback: number) => Number(Deno.env.get(name) ?? fallback);
const procs = env("BENCH_CLIENT_PROCS", Math.ceil(clients / 6250));
const perSession = env("BENCH_STREAMS_PER_CONNECTION", 1000);
const phaseMs = env("BENCH_TIMEOUT_S", 300) * 1000;
const clientTransport = Deno.env.get("BENCH_CLIENT") ?? "codec";
if (!(TRANSPORTS as readonly string[]).includes(clientTransport)) {
  throw new Error(`BENCH_CLIENT: ${clientTransport} is not one of ${TRANSPORTS.join(", ")}`);
}
const root = Deno.env.get("BENCH_MESHD_ROOT") ?? new URL("../../../", import.meta.url).pathname;
if (!Number.isInteger(clients) || clients < 1) {
  throw new Error(`clients: ${Deno.args[0]} is not 1k, 10k, 25k or a count`);
}

/** Progress on stderr, so that a slow phase on a busy machine is visible. */
const progress = (what: string) => console.error(`meshd_scale ${new Date().toISOString()} ${what}`);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/** What meshd's histograms say happened between two scrapes: count and total seconds of each. */
async function meshdSide(meshd: Meshd, before: string): Promise<Record<string, number>> {
  const after = await meshd.metrics();
  const delta = (name: string) => {
    const a = histogram(after, name), b = histogram(before, name);
    return { sum: a.sum - b.sum, count: a.count - b.count };
  };
  const f = delta("disco_push_fanout_time"), c = delta("disco_proxy_convergence_time");
  const b = delta("disco_pushcontext_init_seconds"), q = delta("disco_proxy_queue_time");
  return {
    pushes: f.count,
    fanoutMsTotal: Math.round(f.sum * 1000),
    fanoutMs: f.count > 0 ? Math.round((f.sum / f.count) * 1000) : -1,
    queueMsMean: q.count > 0 ? Math.round((q.sum / q.count) * 1000) : -1,
    pushContextBuilds: b.count,
    pushContextMsTotal: Math.round(b.sum * 1000),
    ackConvergenceMsMean: c.count > 0 ? Math.round((c.sum / c.count) * 1000) : -1,
  };
}

/**
 * The responses meshd sent per connected proxy since `before` (disco_xds_pushes by type, divided by
 * `proxies`): how many nonces, writes and ACKs a cold sync cost each proxy.
 */
async function responsesPerProxy(
  meshd: Meshd,
  before: string,
  proxies: number,
): Promise<Record<string, number>> {
  const a = labelledCounter(await meshd.metrics(), "disco_xds_pushes");
  const b = labelledCounter(before, "disco_xds_pushes");
  return Object.fromEntries(
    Object.entries(a).map(([type, n]) => [type, round((n - (b[type] ?? 0)) / proxies)]),
  );
}

/**
 * BENCH_POLICY_CHANGES=K (default 1): K - 1 more policy changes after the first, each timed alone,
 * so that an A/B of the push's CPU has more than one sample of a 0.1 s figure.
 */
async function repeatChanges(
  cs: ClientProcess[],
  meshd: Meshd,
  dir: string,
): Promise<Record<string, number[]> | undefined> {
  const k = env("BENCH_POLICY_CHANGES", 1);
  if (k <= 1) return undefined;
  const out: Record<string, number[]> = { meshdCpuSeconds: [], fanoutMs: [], buildMs: [], clientP99: [] };
  for (let i = 2; i <= k; i++) {
    for (const c of cs) await c.send("arm");
    await Promise.all(cs.map((c) => c.next("armed", 30_000)));
    const before = await meshd.metrics();
    const cpu = meshd.cpuSeconds();
    const changedAt = Date.now();
    await Deno.writeTextFile(`${dir}/policy.yaml`, policy(i));
    const conv = await all(cs, "converged", phaseMs);
    out.meshdCpuSeconds.push(round(meshd.cpuSeconds() - cpu));
    const side = await meshdSide(meshd, before);
    out.fanoutMs.push(side.fanoutMs);
    out.buildMs.push(side.pushContextMsTotal);
    out.clientP99.push(percentiles(conv.times.map((t) => (t === 0 ? -1 : t - changedAt))).p99);
    await delay(500);
  }
  return out;
}

const heapDir = Deno.env.get("BENCH_HEAP_DIR");
const dir = await Deno.makeTempDir({ prefix: "meshd-scale-" });
await writeConfig(dir, services, clients);
const meshd = await startMeshd(root, dir, {
  servingChildren: env("BENCH_SERVING_CHILDREN", 0),
  grpcTransport: Deno.env.get("BENCH_GRPC_TRANSPORT"),
  profileDir: Deno.env.get("BENCH_PROFILE"),
  preload: heapDir ? new URL("./heap_preload.ts", import.meta.url).pathname : undefined,
  args: (Deno.env.get("BENCH_MESHD_ARGS") ?? "").split(" ").filter(Boolean),
  env: Object.fromEntries(
    (Deno.env.get("BENCH_SERVER_ENV") ?? "").split(" ").filter((kv) => kv.includes("=")).map((
      kv,
    ) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  ),
});
progress(`meshd ${meshd.pid} serving on port ${meshd.grpcPort}`);
const spawned: ClientProcess[] = [];
try {
  const idle = meshd.memory();
  if (heapDir) await meshd.heapDump(heapDir, "idle");
  // The probe learns how many resources of each type a synced proxy holds; it stays connected.
  const probe = spawnClient({
    port: meshd.grpcPort,
    first: 0,
    count: 1,
    perSession: 1,
    nodeId: PROBE_NODE_ID,
  });
  spawned.push(probe);
  const expect = (await probe.next("counts", 60_000)).counts as Record<string, number>;

  progress(`probe synced: ${JSON.stringify(expect)}; ${clients} proxies connect`);
  const cpu0 = meshd.cpuSeconds();
  const system0 = meshd.systemCpuSeconds();
  const coldBefore = await meshd.metrics();
  const t0 = Date.now();
  const per = Math.ceil(clients / procs);
  const cs: ClientProcess[] = [];
  for (let first = 0; first < clients; first += per) {
    cs.push(
      spawnClient({ port: meshd.grpcPort, first, count: Math.min(per, clients - first), perSession, expect }),
    );
  }
  spawned.push(...cs);
  const sync = await all(cs, "synced", phaseMs);
  const coldSync = percentiles(sync.times.map((t) => (t === 0 ? -1 : t - t0)));
  const coldCpu = meshd.cpuSeconds() - cpu0;
  const coldSystem = meshd.systemCpuSeconds() - system0;
  const clientColdCpu = cs.map((c) => cpuOf(c.pid)).reduce((a, b) => a + b, 0);
  const clientColdSystem = cs.map((c) => cpuOf(c.pid, "system")).reduce((a, b) => a + b, 0);
  const synced = meshd.memory();
  const coldMeshd = await meshdSide(meshd, coldBefore);
  const coldResponses = await responsesPerProxy(meshd, coldBefore, clients);
  if (heapDir) {
    await delay(3000);
    await meshd.heapDump(heapDir, `synced-${clients}`);
  }

  progress(`cold sync done (${coldSync.missing} missing); policy change next`);
  // Let the pushes that the connections triggered (proxied workloads) settle, then change the policy.
  await delay(3000);
  const settledResponses = await responsesPerProxy(meshd, coldBefore, clients);
  const settleCpu = meshd.cpuSeconds() - cpu0 - coldCpu;
  for (const c of cs) await c.send("arm");
  await Promise.all(cs.map((c) => c.next("armed", 30_000)));
  const before = await meshd.metrics();
  const clientCpu0 = cs.map((c) => cpuOf(c.pid)).reduce((a, b) => a + b, 0);
  const cpu1 = meshd.cpuSeconds();
  const changedAt = Date.now();
  await Deno.writeTextFile(`${dir}/policy.yaml`, policy(1));
  const conv = await all(cs, "converged", phaseMs);
  const pushCpu = meshd.cpuSeconds() - cpu1;
  const clientPushCpu = cs.map((c) => cpuOf(c.pid)).reduce((a, b) => a + b, 0) - clientCpu0;
  await delay(500);
  const after = meshd.memory();
  const repeats = await repeatChanges(cs, meshd, dir);
  console.log(JSON.stringify({
    clients,
    services,
    // commit: the checkout whose meshd ran (BENCH_MESHD_ROOT's); bench_commit: this bench's, when other.
    ...await provenance(),
    clientProcesses: cs.length,
    clientTransport,
    coldSync: {
      seconds: round((coldSync.max >= 0 ? coldSync.max : phaseMs) / 1000),
      p50Ms: coldSync.p50,
      p99Ms: coldSync.p99,
      missing: coldSync.missing,
      meshdCpuSeconds: round(coldCpu),
      // meshd's CPU per connecting proxy: the figure a client-side change cannot move.
      meshdCpuUsPerProxy: Math.round((coldCpu / clients) * 1e6),
      // The kernel's part (the socket writes of what meshd sends: bound by the bytes).
      meshdSystemCpuSeconds: round(coldSystem),
      // The pushes the connections triggered (their workloads now proxied) after the last proxy synced.
      meshdSettleCpuSeconds: round(settleCpu),
      responsesPerProxy: coldResponses,
      responsesPerProxySettled: settledResponses,
      clientCpuSeconds: round(clientColdCpu),
      // The kernel's part (loopback TCP receive and send): what no client-side change can remove.
      clientSystemCpuSeconds: round(clientColdSystem),
      clientMiBReceived: Math.round(sync.bytes / 2 ** 20),
      streamErrors: sync.errors,
      streamsClosed: sync.closed,
      meshd: coldMeshd,
    },
    convergence: {
      client: percentiles(conv.times.map((t) => (t === 0 ? -1 : t - changedAt))),
      meshd: await meshdSide(meshd, before),
      meshdCpuSeconds: round(pushCpu),
      clientCpuSeconds: round(clientPushCpu),
    },
    ...(repeats ? { repeatedChanges: repeats } : {}),
    meshdMiB: {
      idleRss: Math.round(idle.rssMiB),
      syncedRss: Math.round(synced.rssMiB),
      afterPushRss: Math.round(after.rssMiB),
      hwm: Math.round(after.hwmMiB),
    },
    clientHwmMiB: Math.round(Math.max(...cs.map((c) => memoryOf(c.pid).hwmMiB))),
  }));
} finally {
  for (const c of spawned) await c.kill();
  await meshd.stop();
  await Deno.remove(dir, { recursive: true });
}
Deno.exit(0);

async function provenance(): Promise<{ commit: string; command: string; bench_commit?: string }> {
  const bench = await runProvenance(["tests/bench/meshd_scale/main.ts", ...Deno.args]);
  const commit = await checkoutCommit(root);
  return {
    commit,
    command: bench.command,
    ...(commit === bench.commit ? {} : { bench_commit: bench.commit }),
  };
}
