/** Table-driven tests of the summary's met/missed logic (pure; no bench runs). */
import assert from "node:assert/strict";
import type { TargetResult } from "../proxy_pair/summary.ts";
import {
  evaluateGoals,
  type GoalInputs,
  goalsTable,
  type ProxyPairJson,
  type Status,
  workerMemory,
} from "./goals.ts";

/** A target: `cpu` pair CPU seconds over `requests` under wrk, latency p50/p99, VmHWM per process. */
function target(
  cpu: number,
  requests: number,
  rps: number,
  p50: number,
  p99: number,
  hwm: Record<string, number>,
): TargetResult {
  const procs = Object.keys(hwm);
  const cpuS = Object.fromEntries(procs.map((p) => [p, cpu / procs.length]));
  return {
    throughput: { rps, requests, cpu_s: { app: 9, ...cpuS } },
    latency: { p50_ms: p50, p90_ms: p99, p99_ms: p99, cpu_s: { app: 1, ...cpuS } },
    mem_mib: Object.fromEntries(Object.entries(hwm).map(([p, h]) => [p, { rss: h, hwm: h }])),
  };
}

/** A concurrency-1 proxy_pair line; `mesh` overrides the mesh pair. */
function pair(mesh: Partial<{ cpu: number; rps: number; p50: number; p99: number; hwm: number }> = {}) {
  const m = { cpu: 1, rps: 10_000, p50: 2, p99: 10, hwm: 70, ...mesh };
  return {
    commit: "abc1234",
    command: "./dev deno run -A tests/bench/proxy_pair/main.ts 1 10",
    concurrency: 1,
    direct: target(0, 1, 40_000, 1, 5, {}),
    // HAProxy: 1 CPU s over 10,000 requests (100 µs per request), added p50 1 ms, p99 5 ms.
    haproxy: target(1, 10_000, 10_000, 2, 10, { client_haproxy: 17, server_haproxy: 22 }),
    mesh: target(m.cpu, 10_000, m.rps, m.p50, m.p99, { client_proxy: m.hwm, server_proxy: m.hwm - 5 }),
    node_tls: target(0.8, 10_000, 12_000, 1.5, 8, { client_pipe: 70, server_pipe: 64 }),
  } satisfies ProxyPairJson;
}

const meshd = (clients: number, p99Ms: number, mib: number, coldS: number, missing = 0, unsynced = 0) => ({
  clients,
  commit: "def5678",
  coldSync: { seconds: coldS, missing: unsynced },
  convergence: { client: { p50: 1, p99: p99Ms, max: p99Ms, missing }, meshd: { pushes: 1, fanoutMs: 120 } },
  meshdMiB: { idleRss: 100, syncedRss: mib - 1, afterPushRss: mib - 2, hwm: mib },
});

const cases: [string, GoalInputs, string, Status, Status?][] = [
  ["CPU at parity: met, stretch met", { pair1: pair() }, "proxy pair CPU per request", "met", "met"],
  [
    "CPU 1.2×: met, stretch missed",
    { pair1: pair({ cpu: 1.2 }) },
    "proxy pair CPU per request",
    "met",
    "missed",
  ],
  ["CPU 1.21×: missed", { pair1: pair({ cpu: 1.21 }) }, "proxy pair CPU per request", "missed", "missed"],
  ["no run: CPU not run", {}, "proxy pair CPU per request", "not run"],
  ["throughput 0.8×: met", { pair1: pair({ rps: 8_000 }) }, "proxy pair throughput", "met"],
  ["throughput 0.79×: missed", { pair1: pair({ rps: 7_900 }) }, "proxy pair throughput", "missed"],
  ["added p50 equal to HAProxy's: met", { pair1: pair() }, "added p50 at 1,000 rps", "met"],
  ["added p50 above HAProxy's: missed", { pair1: pair({ p50: 2.1 }) }, "added p50 at 1,000 rps", "missed"],
  ["added p99 below HAProxy's: met", { pair1: pair({ p99: 9 }) }, "added p99 at 1,000 rps", "met"],
  ["added p99 above HAProxy's: missed", { pair1: pair({ p99: 11 }) }, "added p99 at 1,000 rps", "missed"],
  [
    "VmHWM 80 MiB: met, stretch missed",
    { pair1: pair({ hwm: 80 }) },
    "proxy VmHWM at --concurrency 1",
    "met",
    "missed",
  ],
  [
    "VmHWM 80.5 MiB: missed",
    { pair1: pair({ hwm: 80.5 }) },
    "proxy VmHWM at --concurrency 1",
    "missed",
    "missed",
  ],
  ["VmHWM 57 MiB: stretch met", { pair1: pair({ hwm: 57 }) }, "proxy VmHWM at --concurrency 1", "met", "met"],
  [
    "VmHWM of a concurrency-2 run is not the goal's",
    { pair1: { ...pair(), concurrency: 2 } },
    "proxy VmHWM at --concurrency 1",
    "not run",
  ],
  [
    "VmHWM 1.1× the node:tls floor: met",
    { pair1: pair({ hwm: 77 }) },
    "proxy VmHWM vs node:tls floor",
    "met",
  ],
  [
    "VmHWM 1.11× the node:tls floor: missed",
    { pair1: pair({ hwm: 78 }) },
    "proxy VmHWM vs node:tls floor",
    "missed",
  ],
  [
    "worker +12 MiB: met",
    { workers: [{ ...pair({ hwm: 70 }), concurrency: 2 }, { ...pair({ hwm: 82 }), concurrency: 3 }] },
    "memory per extra worker",
    "met",
  ],
  [
    "worker +13 MiB: missed",
    { workers: [{ ...pair({ hwm: 83 }), concurrency: 3 }, { ...pair({ hwm: 70 }), concurrency: 2 }] },
    "memory per extra worker",
    "missed",
  ],
  ["worker with one run only: not run", { workers: [pair()] }, "memory per extra worker", "not run"],
  [
    "authz 999 ns: met",
    { authz: { worstNs: 999, worstCase: "x" } },
    "one request against 1,000 authorization policies",
    "met",
  ],
  [
    "authz 1,001 ns: missed",
    { authz: { worstNs: 1001, worstCase: "x" } },
    "one request against 1,000 authorization policies",
    "missed",
  ],
  ["authz absent: not run", {}, "one request against 1,000 authorization policies", "not run"],
  [
    "10k p99 0.3 s: met",
    { meshd: [meshd(10_000, 300, 900, 4)] },
    "meshd at 10,000 proxies: p99 convergence",
    "met",
  ],
  [
    "10k p99 0.301 s: missed",
    { meshd: [meshd(10_000, 301, 900, 4)] },
    "meshd at 10,000 proxies: p99 convergence",
    "missed",
  ],
  [
    "10k p99 met but a client never converged: missed",
    { meshd: [meshd(10_000, 100, 900, 4, 1)] },
    "meshd at 10,000 proxies: p99 convergence",
    "missed",
  ],
  [
    "10k 953 MiB: met (1 GB = 953.7 MiB)",
    { meshd: [meshd(10_000, 1, 953, 4)] },
    "meshd at 10,000 proxies: memory",
    "met",
  ],
  ["10k 954 MiB: missed", { meshd: [meshd(10_000, 1, 954, 4)] }, "meshd at 10,000 proxies: memory", "missed"],
  ["cold sync 5 s: met", { meshd: [meshd(10_000, 1, 1, 5)] }, "cold sync of 10,000 proxies", "met"],
  [
    "cold sync 4 s but a proxy never synced: missed",
    { meshd: [meshd(10_000, 1, 1, 4, 0, 1)] },
    "cold sync of 10,000 proxies",
    "missed",
  ],
  ["cold sync 5.1 s: missed", { meshd: [meshd(10_000, 1, 1, 5.1)] }, "cold sync of 10,000 proxies", "missed"],
  [
    "25k p99 exactly 1 s: missed (< 1 s)",
    { meshd: [meshd(25_000, 1000, 900, 9)] },
    "meshd at 25,000 proxies: p99 convergence",
    "missed",
  ],
  [
    "25k p99 0.999 s: met",
    { meshd: [meshd(25_000, 999, 900, 9)] },
    "meshd at 25,000 proxies: p99 convergence",
    "met",
  ],
  [
    "25k 1,907 MiB: met (2 GB = 1,907.3 MiB)",
    { meshd: [meshd(25_000, 1, 1907, 9)] },
    "meshd at 25,000 proxies: memory",
    "met",
  ],
  [
    "10k with 100 services is not the goal's run: not run",
    { meshd: [{ ...meshd(10_000, 1, 1, 1), services: 100 }] },
    "meshd at 10,000 proxies: memory",
    "not run",
  ],
  [
    "25k without a run: not run",
    { meshd: [meshd(10_000, 1, 1, 1)] },
    "meshd at 25,000 proxies: memory",
    "not run",
  ],
  [
    "meshd_scale's old fields (convergenceMs, meshdRssMiB, initialSyncSeconds)",
    {
      meshd: [{
        clients: 10_000,
        convergenceMs: { p50: 1, p99: 800 },
        meshdRssMiB: { idle: 1, synced: 1000, afterPush: 1020 },
        initialSyncSeconds: 24,
        converged: 10_000,
      }],
    },
    "meshd at 10,000 proxies: p99 convergence",
    "missed",
  ],
];

for (const [name, inputs, goal, status, stretch] of cases) {
  Deno.test(`goals: ${name}`, () => {
    const row = evaluateGoals(inputs).find((r) => r.goal === goal);
    assert.ok(row, `no row ${goal}`);
    assert.equal(row.status, status, JSON.stringify(row));
    if (stretch) assert.equal(row.stretch, stretch, JSON.stringify(row));
    if (status === "not run") assert.equal(row.measured, "not run");
    else assert.match(row.source ?? "", /^[0-9a-f]{7}|unknown/);
  });
}

Deno.test("goals: every goal of the issue has a row, and the table has one line per row", () => {
  const rows = evaluateGoals({});
  assert.equal(rows.length, 13);
  assert.ok(rows.every((r) => r.status === "not run"));
  assert.equal(goalsTable(rows).split("\n").length, rows.length + 2);
});

Deno.test("goals: meshd's own fan-out time is shown beside the convergence at the client", () => {
  const rows = evaluateGoals({ meshd: [meshd(10_000, 250, 900, 4)] });
  assert.equal(
    rows.find((r) => r.goal === "meshd at 10,000 proxies: p99 convergence")?.measured,
    "0.25 s at the client (meshd's fan-out 120 ms)",
  );
});

Deno.test("goals: the old meshd_scale fields are read (memory, cold sync)", () => {
  const rows = evaluateGoals(cases.at(-1)![1]);
  assert.equal(rows.find((r) => r.goal === "meshd at 10,000 proxies: memory")?.measured, "1020 MiB (peak)");
  assert.equal(rows.find((r) => r.goal === "cold sync of 10,000 proxies")?.status, "missed");
});

Deno.test("goals: memory per extra worker divides by the extra workers and takes the larger proxy", () => {
  const c3: ProxyPairJson = { ...pair({ hwm: 90 }), concurrency: 3 };
  c3.mesh!.mem_mib.server_proxy.hwm = 70;
  c3.mesh!.idle_mem_mib = { client_proxy: { rss: 80, hwm: 80 }, server_proxy: { rss: 60, hwm: 60 } };
  const c1: ProxyPairJson = pair({ hwm: 70 });
  c1.mesh!.idle_mem_mib = { client_proxy: { rss: 50, hwm: 50 }, server_proxy: { rss: 50, hwm: 50 } };
  // client 70 → 90 and server 65 → 70 over two extra workers: 10 and 2.5 MiB; idle 15 and 5.
  assert.deepEqual(workerMemory([c3, c1]), { hwm: 10, idle: 15, from: 1, to: 3 });
  assert.equal(workerMemory([c3, c3]), null);
  assert.equal(workerMemory(undefined), null);
  const row = evaluateGoals({ workers: [c1, c3] }).find((r) => r.goal === "memory per extra worker");
  assert.match(row?.note ?? "", /two Worker isolates/);
});

Deno.test("goals: with a base run the table gains a before column (its figure, verdict and source)", () => {
  const base = { ...pair({ cpu: 2.4 }), commit: "44c5ea8", proxy_commit: "44c5ea8" };
  const table = goalsTable(evaluateGoals({ pair1: pair() }), evaluateGoals({ pair1: base }));
  const lines = table.split("\n");
  assert.match(lines[0], /^\| goal \| target \| before \| measured \| ratio \| met\/missed \|/);
  const cpu = lines.find((l) => l.startsWith("| proxy pair CPU per request"))!;
  assert.match(
    cpu,
    /\| 2\.4× \(240 vs 100 µs\): missed \(44c5ea8 \(proxy 44c5ea8\): .*\| 1× \(100 vs 100 µs\) \|/,
  );
  assert.match(lines.find((l) => l.startsWith("| one request against"))!, /\| not run \| not run \|/);
});
