/**
 * The proxy pair bench's headline (issue 17 item 5): each pair's CPU per request under the throughput
 * load, the mesh pair's as a ratio to HAProxy's, VmHWM per process, and every mesh figure as a ratio
 * to each floor (node:tls and Deno-TLS pass-through pairs). Pure functions over the bench's results; a
 * figure that needs a target that did not run is null.
 *
 * @module
 */
import { round } from "../pair_support.ts";

/** What the bench recorded for one target (direct, mesh, haproxy, node_tls, deno_tls). */
export interface TargetResult {
  throughput: { rps: number; requests: number; cpu_s: Record<string, number> };
  latency: { p50_ms: number; p90_ms: number; p99_ms: number; cpu_s: Record<string, number> };
  /** VmRSS and VmHWM per process after the loads (the app is not listed), MiB. */
  mem_mib: Record<string, { rss: number; hwm: number }>;
  /** The same before the loads (absent for direct). */
  idle_mem_mib?: Record<string, { rss: number; hwm: number }>;
}

/** The results by target name; a target that did not run is absent. */
export type Results = Partial<Record<string, TargetResult>>;

/** The floors, by target name. */
export const FLOORS = ["node_tls", "deno_tls"] as const;

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || !Number.isFinite(a) ||
    !Number.isFinite(b) ||
    b === 0
    ? null
    : round(a / b, 3);

/**
 * CPU µs per request of a pair under the throughput load: the CPU seconds of its processes other than
 * the app (`cpu_s` without `app`) divided by the requests wrk completed. null when absent.
 */
export function pairCpuUsPerRequest(r: TargetResult | undefined): number | null {
  if (!r || !(r.throughput.requests > 0)) return null;
  const cpu = Object.entries(r.throughput.cpu_s).filter(([k]) => k !== "app").reduce((a, [, v]) => a + v, 0);
  return round((cpu * 1e6) / r.throughput.requests, 1);
}

/** The largest VmHWM among a target's processes, MiB (null when absent). */
export function peakHwm(r: TargetResult | undefined): number | null {
  if (!r) return null;
  const hwms = Object.values(r.mem_mib).map((m) => m.hwm);
  return hwms.length ? Math.max(...hwms) : null;
}

/** The headline: CPU per request of every pair and the mesh ÷ HAProxy ratio, and VmHWM per process. */
export function headline(results: Results): {
  cpu_per_request_mesh_vs_haproxy: number | null;
  cpu_us_per_request: Record<string, number | null>;
  vmhwm_mib: Record<string, Record<string, number>>;
} {
  const pairs = ["mesh", "haproxy", ...FLOORS].filter((t) => results[t]);
  return {
    cpu_per_request_mesh_vs_haproxy: ratio(
      pairCpuUsPerRequest(results.mesh),
      pairCpuUsPerRequest(results.haproxy),
    ),
    cpu_us_per_request: Object.fromEntries(pairs.map((t) => [t, pairCpuUsPerRequest(results[t])])),
    vmhwm_mib: Object.fromEntries(
      pairs.map((
        t,
      ) => [t, Object.fromEntries(Object.entries(results[t]!.mem_mib).map(([p, m]) => [p, m.hwm]))]),
    ),
  };
}

/** One floor's ratios: the mesh pair's figure ÷ the floor's (CPU per request, throughput, VmHWM, latency). */
export interface FloorRatios {
  cpu_per_request: number | null;
  throughput: number | null;
  /**
   * Latency added to direct's under hey, mesh's ÷ the floor's, at p50 and p99; null when direct did not
   * run or the floor added nothing (its added latency is then noise, and so would the ratio be).
   */
  added_latency: { p50: number | null; p99: number | null };
  /** client proxy ÷ client pipe, server proxy ÷ server pipe, and the larger peak ÷ the larger peak. */
  vmhwm: { client: number | null; server: number | null; peak: number | null };
}

/** The mesh pair against each floor that ran. */
export function versusFloors(results: Results): Record<string, FloorRatios> {
  const m = results.mesh;
  return Object.fromEntries(
    FLOORS.filter((f) => results[f]).map((f) => {
      const floor = results[f]!;
      return [f, {
        cpu_per_request: ratio(pairCpuUsPerRequest(m), pairCpuUsPerRequest(floor)),
        throughput: ratio(m?.throughput.rps, floor.throughput.rps),
        added_latency: {
          p50: addedRatio(m, floor, results.direct, "p50_ms"),
          p99: addedRatio(m, floor, results.direct, "p99_ms"),
        },
        vmhwm: {
          client: ratio(m?.mem_mib.client_proxy?.hwm, floor.mem_mib.client_pipe?.hwm),
          server: ratio(m?.mem_mib.server_proxy?.hwm, floor.mem_mib.server_pipe?.hwm),
          peak: ratio(peakHwm(m), peakHwm(floor)),
        },
      }];
    }),
  );
}

function addedRatio(
  m: TargetResult | undefined,
  floor: TargetResult,
  direct: TargetResult | undefined,
  p: "p50_ms" | "p99_ms",
): number | null {
  if (!m || !direct) return null;
  const floorAdded = floor.latency[p] - direct.latency[p];
  return floorAdded > 0 ? ratio(m.latency[p] - direct.latency[p], floorAdded) : null;
}

/** The headline as a few lines of text for a person (stderr), `where` naming the commit and the command. */
export function headlineText(results: Results, where: string): string {
  const h = headline(results);
  const vs = versusFloors(results);
  const us = (t: string) =>
    h.cpu_us_per_request[t] === undefined ? "not run" : `${h.cpu_us_per_request[t]} µs`;
  const x = (n: number | null) => n === null ? "n/a" : `${n}×`;
  const lines = [
    `proxy_pair headline (${where})`,
    `  CPU per request, pair, under wrk: mesh ${us("mesh")} = ${
      x(h.cpu_per_request_mesh_vs_haproxy)
    } HAProxy (${us("haproxy")}); floors: node:tls ${us("node_tls")}, Deno TLS ${us("deno_tls")}`,
    `  throughput: mesh ${results.mesh?.throughput.rps ?? "not run"} req/s, HAProxy ${
      results.haproxy?.throughput.rps ?? "not run"
    } (${x(ratio(results.mesh?.throughput.rps, results.haproxy?.throughput.rps))})`,
    `  VmHWM MiB: ${
      Object.entries(h.vmhwm_mib).map(([t, ps]) =>
        `${t} ${Object.entries(ps).map(([p, v]) => `${p} ${v}`).join(", ")}`
      ).join("; ")
    }`,
  ];
  for (const [f, r] of Object.entries(vs)) {
    lines.push(
      `  mesh ÷ ${f} floor: CPU per request ${x(r.cpu_per_request)}, throughput ${
        x(r.throughput)
      }, VmHWM client ${x(r.vmhwm.client)} server ${x(r.vmhwm.server)}, added latency p50 ${
        x(r.added_latency.p50)
      } p99 ${x(r.added_latency.p99)}`,
    );
  }
  return lines.join("\n");
}
