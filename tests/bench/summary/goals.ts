/**
 * Issue 17's goals ("Deliver" table) judged from the benches' JSON: one row per goal with its target,
 * what was measured, a ratio, and met / missed / not run. Pure: the inputs are the JSON lines the benches
 * printed (tests/bench/proxy_pair at `--concurrency` 1 and 2, `deno bench --json` of
 * tests/bench/authz_bench.ts, tests/bench/meshd_scale at 10,000 and 25,000 clients).
 *
 * The ratio column is the mesh's figure ÷ the reference's (HAProxy, the node:tls floor) for a relative
 * goal, and the measured value ÷ the limit for an absolute one; either way a goal of the form "≤" is met
 * when the measured value is at most its limit. "1 GB" and "2 GB" are 10^9 and 2·10^9 bytes (953.7 and
 * 1,907.3 MiB), Istio's 60 MB likewise 57.2 MiB.
 *
 * @module
 */
import { round } from "../pair_support.ts";
import { pairCpuUsPerRequest, peakHwm, type TargetResult } from "../proxy_pair/summary.ts";

/** One proxy_pair JSON line (the fields read here; other fields are ignored). */
export interface ProxyPairJson {
  commit?: string;
  command?: string;
  /** The checkout whose proxy ran, when it was not the bench's own (BENCH_PROXY_ROOT). */
  proxy_commit?: string;
  concurrency: number;
  direct?: TargetResult;
  mesh?: TargetResult;
  haproxy?: TargetResult;
  node_tls?: TargetResult;
  deno_tls?: TargetResult;
}

/** meshd_scale's JSON line: the fields of both its old and its rebuilt output are understood. */
export type MeshdScaleJson = Record<string, unknown> & { clients: number };

/** The authorization figure: the slowest 1,000-policy request (ns per request) and its source. */
export interface AuthzFigure {
  worstNs: number;
  worstCase: string;
  commit?: string;
  command?: string;
}

/** Everything the summary judges; an absent input makes its goals "not run". */
export interface GoalInputs {
  /** proxy_pair at `--concurrency 1` (all targets). */
  pair1?: ProxyPairJson;
  /**
   * proxy_pair runs at two concurrencies (the mesh target at least) for the memory per extra worker;
   * `./dev bench` runs 2 and 3, since at 1 the data path may run inline on the main isolate (no Worker).
   */
  workers?: ProxyPairJson[];
  authz?: AuthzFigure;
  /** meshd_scale's JSON lines, any client counts (10,000 and 25,000 are judged). */
  meshd?: MeshdScaleJson[];
}

/** A goal's verdict. */
export type Status = "met" | "missed" | "not run";

/** One row of the summary table. */
export interface GoalRow {
  goal: string;
  target: string;
  /** What was measured, with its unit ("not run" when absent). */
  measured: string;
  ratio: number | null;
  status: Status;
  /** The stretch target's verdict, for goals that have one. */
  stretch?: Status;
  /** Why a goal was not run or what decided it, when the figures alone do not say. */
  note?: string;
  /** The commit and the command of the figure. */
  source?: string;
}

const MB = 1e6 / 2 ** 20;
const GB = 1e9 / 2 ** 20;

const source = (j: { commit?: string; command?: string; proxy_commit?: string } | undefined) =>
  j
    ? `${j.commit ?? "unknown commit"}${j.proxy_commit ? ` (proxy ${j.proxy_commit})` : ""}: ${
      j.command ?? "unknown command"
    }`
    : undefined;
const finite = (v: number | null | undefined): v is number => typeof v === "number" && Number.isFinite(v);
const r3 = (n: number | null) => finite(n) ? round(n, 3) : null;
const div = (a: number | null | undefined, b: number | null | undefined) =>
  finite(a) && finite(b) && b !== 0 ? a / b : null;

/** A goal's bound: "le" ≤, "lt" <, "ge" ≥ `value`. */
type Bound = { op: "le" | "lt" | "ge"; value: number };
const le = (value: number): Bound => ({ op: "le", value });

/** The verdict of `v` against `bound`: "not run" when there is no figure. */
export function judge(v: number | null | undefined, bound: Bound): Status {
  if (!finite(v)) return "not run";
  const ok = bound.op === "le" ? v <= bound.value : bound.op === "lt" ? v < bound.value : v >= bound.value;
  return ok ? "met" : "missed";
}

function row(
  goal: string,
  target: string,
  value: number | null,
  measured: string,
  bound: Bound,
  ratio: number | null,
  from: string | undefined,
  extra: Partial<GoalRow> = {},
): GoalRow {
  const ran = finite(value);
  return {
    goal,
    target,
    measured: ran ? measured : "not run",
    ratio: ran ? r3(ratio) : null,
    status: judge(value, bound),
    ...(ran ? { source: from } : {}),
    ...extra,
  };
}

function proxyRows(p1: ProxyPairJson | undefined, workers: ProxyPairJson[] | undefined): GoalRow[] {
  const src = source(p1);
  const mesh = p1?.mesh, hap = p1?.haproxy, direct = p1?.direct;
  const meshUs = pairCpuUsPerRequest(mesh), hapUs = pairCpuUsPerRequest(hap);
  const cpu = div(meshUs, hapUs);
  const rows: GoalRow[] = [
    row(
      "proxy pair CPU per request",
      "≤ 1.2× HAProxy pair's (stretch ≤ 1.0×)",
      cpu,
      `${r3(cpu)}× (${meshUs} vs ${hapUs} µs)`,
      le(1.2),
      cpu,
      src,
      finite(cpu) ? { stretch: judge(cpu, le(1.0)) } : {},
    ),
  ];
  const tput = div(mesh?.throughput.rps, hap?.throughput.rps);
  rows.push(row(
    "proxy pair throughput",
    "≥ 0.8× HAProxy pair's",
    tput,
    `${r3(tput)}× (${mesh?.throughput.rps} vs ${hap?.throughput.rps} req/s)`,
    { op: "ge", value: 0.8 },
    tput,
    src,
  ));
  for (const p of ["p50", "p99"] as const) {
    const k = `${p}_ms` as const;
    const m = mesh && direct ? round(mesh.latency[k] - direct.latency[k], 3) : null;
    const h = hap && direct ? round(hap.latency[k] - direct.latency[k], 3) : null;
    const ran = finite(m) && finite(h);
    rows.push(row(
      `added ${p} at 1,000 rps`,
      "≤ HAProxy pair's added latency",
      ran ? m - h : null,
      `${m} ms vs HAProxy ${h} ms`,
      le(0),
      ran && h > 0 ? m / h : null,
      src,
      ran && h <= 0 ? { note: "HAProxy's added latency ≤ 0 (noise): no ratio" } : {},
    ));
  }
  const hwm = p1?.concurrency === 1 ? peakHwm(mesh) : null;
  rows.push(row(
    "proxy VmHWM at --concurrency 1",
    "≤ 80 MiB per proxy (stretch Istio's 60 MB = 57.2 MiB)",
    hwm,
    `${hwm} MiB (the larger proxy)`,
    le(80),
    div(hwm, 80),
    src,
    finite(hwm)
      ? { stretch: judge(hwm, le(60 * MB)) }
      : p1 && p1.concurrency !== 1
      ? { note: `proxy_pair ran at --concurrency ${p1.concurrency}` }
      : {},
  ));
  const floorPeak = peakHwm(p1?.node_tls);
  const vsFloor = div(hwm, floorPeak);
  rows.push(row(
    "proxy VmHWM vs node:tls floor",
    "≤ 1.1× the node:tls pipe's peak, same run",
    vsFloor,
    `${r3(vsFloor)}× (${hwm} vs ${floorPeak} MiB)`,
    le(1.1),
    vsFloor,
    src,
  ));
  rows.push(workerRow(workers));
  return rows;
}

function workerRow(runs: ProxyPairJson[] | undefined): GoalRow {
  const w = workerMemory(runs);
  const note = w?.from === 1
    ? "from --concurrency 1: when the data path runs inline at 1, this step is two Worker isolates"
    : undefined;
  return row(
    "memory per extra worker",
    "≤ 12 MiB",
    w?.hwm ?? null,
    `${w?.hwm} MiB VmHWM (idle ${w?.idle} MiB), --concurrency ${w?.from} → ${w?.to}, the larger proxy`,
    le(12),
    div(w?.hwm, 12),
    runs?.map(source).join("; "),
    w
      ? (note ? { note } : {})
      : { note: "needs proxy_pair's mesh at two concurrencies (./dev bench runs 2 and 3)" },
  );
}

/**
 * Memory per extra worker, MiB: for each proxy (client, server) its VmHWM (and its idle VmRSS) in the run
 * with the highest concurrency minus the same in the run with the lowest, divided by the difference in
 * workers; the larger of the two proxies. null without two runs of the mesh target at different
 * concurrencies.
 */
export function workerMemory(
  runs: ProxyPairJson[] | undefined,
): { hwm: number; idle: number | null; from: number; to: number } | null {
  const withMesh = (runs ?? []).filter((r) => r.mesh).sort((a, b) => a.concurrency - b.concurrency);
  const a = withMesh[0], b = withMesh.at(-1);
  if (!a || !b || !(b.concurrency > a.concurrency)) return null;
  const extra = b.concurrency - a.concurrency;
  const step = (pick: (r: ProxyPairJson, proxy: string) => number | undefined) => {
    const per = ["client_proxy", "server_proxy"].map((p) => {
      const x = pick(a, p), y = pick(b, p);
      return finite(x) && finite(y) ? (y - x) / extra : NaN;
    }).filter(Number.isFinite);
    return per.length ? round(Math.max(...per), 2) : null;
  };
  const hwm = step((r, p) => r.mesh!.mem_mib[p]?.hwm);
  const idle = step((r, p) => r.mesh!.idle_mem_mib?.[p]?.rss);
  return hwm === null ? null : { hwm, idle, from: a.concurrency, to: b.concurrency };
}

function authzRow(a: AuthzFigure | undefined): GoalRow {
  const us = a ? a.worstNs / 1000 : null;
  return row(
    "one request against 1,000 authorization policies",
    "≤ 1 µs",
    us,
    `${r3(us)} µs (slowest indexed case: ${a?.worstCase})`,
    le(1),
    us,
    source(a),
  );
}

const num = (v: unknown): number | undefined => typeof v === "number" && Number.isFinite(v) ? v : undefined;
// deno-lint-ignore no-explicit-any
const at = (o: any, ...path: string[]): unknown => path.reduce((x, k) => x?.[k], o);

/** meshd_scale's p99 convergence at the client, s (old `convergenceMs.p99`, new `convergence.client.p99`). */
export function meshdP99Seconds(j: MeshdScaleJson): number | null {
  const ms = num(at(j, "convergence", "client", "p99")) ?? num(at(j, "convergenceMs", "p99"));
  return ms === undefined || ms < 0 ? null : ms / 1000;
}

/** meshd's peak memory, MiB: the largest figure under `meshdMiB` (new) or `meshdRssMiB` (old). */
export function meshdPeakMiB(j: MeshdScaleJson): number | null {
  const mem = (at(j, "meshdMiB") ?? at(j, "meshdRssMiB")) as Record<string, unknown> | undefined;
  const values = Object.values(mem ?? {}).map(num).filter((v): v is number => v !== undefined);
  return values.length ? Math.max(...values) : null;
}

/** Cold sync of every client, seconds (new `coldSync.seconds`, old `initialSyncSeconds`). */
export function meshdColdSyncSeconds(j: MeshdScaleJson): number | null {
  return num(at(j, "coldSync", "seconds")) ?? num(at(j, "initialSyncSeconds")) ?? null;
}

/** meshd's own mean fan-out time of the change's push, ms (`convergence.meshd.fanoutMs`; absent before). */
function meshdFanoutMs(j: MeshdScaleJson): number | null {
  const ms = num(at(j, "convergence", "meshd", "fanoutMs"));
  return ms === undefined || ms < 0 ? null : ms;
}

/** Proxies that never finished the cold sync (`coldSync.missing`; 0 when not reported). */
function coldSyncMissing(j: MeshdScaleJson): number {
  return num(at(j, "coldSync", "missing")) ?? 0;
}

/** Clients that never converged (new `convergence.client.missing`, old clients − `converged`). */
function meshdMissing(j: MeshdScaleJson): number {
  return num(at(j, "convergence", "client", "missing")) ??
    (num(j.converged) === undefined ? 0 : j.clients - (j.converged as number));
}

function meshdRows(lines: MeshdScaleJson[] | undefined): GoalRow[] {
  const rows: GoalRow[] = [];
  for (const [n, p99Limit, op, gb] of [[10_000, 0.3, "le", 1], [25_000, 1, "lt", 2]] as const) {
    const j = lines?.findLast((l) => l.clients === n && (l.services ?? 1000) === 1000);
    const src = j ? source(j as { commit?: string; command?: string }) : undefined;
    const label = n.toLocaleString("en-US");
    const extra = j
      ? {}
      : { note: `./dev bench --meshd (or --meshd-json <file>) runs meshd_scale at ${label}` };
    const sign = op === "le" ? "≤" : "<";
    const p99 = j ? meshdP99Seconds(j) : null;
    const missing = j ? meshdMissing(j) : 0;
    const p99Row = row(
      `meshd at ${label} proxies: p99 convergence`,
      `${sign} ${p99Limit} s`,
      p99,
      `${p99} s at the client${
        j && meshdFanoutMs(j) !== null ? ` (meshd's fan-out ${meshdFanoutMs(j)} ms)` : ""
      }`,
      { op, value: p99Limit },
      div(p99, p99Limit),
      src,
      missing > 0 ? { note: `${missing} clients never converged` } : extra,
    );
    if (missing > 0 && j) p99Row.status = "missed";
    rows.push(p99Row);
    const mib = j ? meshdPeakMiB(j) : null;
    rows.push(row(
      `meshd at ${label} proxies: memory`,
      `${sign} ${gb} GB (${round(gb * GB, 1)} MiB)`,
      mib,
      `${mib} MiB (peak)`,
      { op, value: gb * GB },
      div(mib, gb * GB),
      src,
      extra,
    ));
    if (n === 10_000) {
      const cold = j ? meshdColdSyncSeconds(j) : null;
      const unsynced = j ? coldSyncMissing(j) : 0;
      const coldRow = row(
        "cold sync of 10,000 proxies",
        "≤ 5 s",
        cold,
        `${cold} s`,
        le(5),
        div(cold, 5),
        src,
        unsynced > 0 ? { note: `${unsynced} proxies never synced` } : extra,
      );
      if (unsynced > 0 && j) coldRow.status = "missed";
      rows.push(coldRow);
    }
  }
  return rows;
}

/** Every goal of issue 17, in the issue's order. */
export function evaluateGoals(inputs: GoalInputs): GoalRow[] {
  return [...proxyRows(inputs.pair1, inputs.workers), authzRow(inputs.authz), ...meshdRows(inputs.meshd)];
}

/** The verdict cell of a row: status, the stretch's, and the note. */
function verdict(r: GoalRow): string {
  return `${r.status}${r.stretch ? ` (stretch ${r.stretch})` : ""}${r.note ? `; ${r.note}` : ""}`;
}

/**
 * The rows as a Markdown table (goal, target, measured, ratio, met/missed, commit: command); with
 * `before` (the same goals judged on a base checkout's run), a "before" column after the target holding
 * the base's measurement and verdict.
 */
export function goalsTable(rows: GoalRow[], before?: GoalRow[]): string {
  const was = (r: GoalRow) => {
    const b = before?.find((x) => x.goal === r.goal);
    return b && b.status !== "not run" ? `${b.measured}: ${b.status} (${b.source})` : "not run";
  };
  const cells = (r: GoalRow) => [
    r.goal,
    r.target,
    ...(before ? [was(r)] : []),
    r.measured,
    r.ratio === null ? "" : `${r.ratio}`,
    verdict(r),
    r.source ?? "",
  ];
  const head = [
    "goal",
    "target",
    ...(before ? ["before"] : []),
    "measured",
    "ratio",
    "met/missed",
    "commit: command",
  ];
  const align = head.map((h) => (h === "ratio" ? "--:" : "---"));
  return [
    `| ${head.join(" | ")} |`,
    `| ${align.join(" | ")} |`,
    ...rows.map((r) => `| ${cells(r).map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`),
  ].join("\n");
}
