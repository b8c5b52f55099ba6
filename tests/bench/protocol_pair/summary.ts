/**
 * The ratios of the protocol benchmark's JSON: per load, mesh and haproxy against direct and against each
 * other, CPU of each proxy pair per unit of work, and added gRPC latency. A ratio that needs a side that
 * did not run is null.
 *
 * @module
 */
import { round } from "../pair_support.ts";

// deno-lint-ignore no-explicit-any
type Side = Record<string, any> | undefined;
type Load = Record<string, Side>;

const ok = (s: Side): s is Record<string, unknown> => s !== undefined && s.unavailable === undefined;
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? null : round(a / b, 3);
/** CPU seconds of the pair's two proxies (client + server) during the load. */
function pairCpu(s: Side): number | undefined {
  if (!ok(s)) return undefined;
  const cpu = s.cpu_s as Record<string, number>;
  return Object.entries(cpu).filter(([k]) => k !== "app").reduce((a, [, v]) => a + v, 0);
}

function tcp(l: Load) {
  const g = (s: Side) => ok(s) ? s.gbit_s as number : undefined;
  const perGb = (s: Side) => ok(s) ? ratio(pairCpu(s), (s.bytes as number) / 1e9) : null;
  return {
    throughput_mesh_vs_haproxy: ratio(g(l.mesh), g(l.haproxy)),
    throughput_mesh_vs_direct: ratio(g(l.mesh), g(l.direct)),
    throughput_haproxy_vs_direct: ratio(g(l.haproxy), g(l.direct)),
    pair_cpu_s_per_gb: { mesh: perGb(l.mesh), haproxy: perGb(l.haproxy) },
  };
}

function h2(l: Load) {
  const rps = (s: Side) => ok(s) ? s.rps as number : undefined;
  const usPerReq = (s: Side) => ok(s) ? round((pairCpu(s)! * 1e6) / (s.succeeded as number), 1) : null;
  const mesh = usPerReq(l.mesh), hap = usPerReq(l.haproxy);
  return {
    rps_mesh_vs_haproxy: ratio(rps(l.mesh), rps(l.haproxy)),
    rps_mesh_vs_direct: ratio(rps(l.mesh), rps(l.direct)),
    rps_haproxy_vs_direct: ratio(rps(l.haproxy), rps(l.direct)),
    pair_cpu_us_per_request: { mesh, haproxy: hap },
    cpu_per_request_mesh_vs_haproxy: ratio(mesh ?? undefined, hap ?? undefined),
  };
}

function grpc(l: Load) {
  const added = (s: Side) =>
    ok(s) && ok(l.direct)
      ? Object.fromEntries(
        ["p50", "p90", "p99"].map((p) => [p, round((s[`${p}_ms`] as number) - l.direct![`${p}_ms`], 3)]),
      )
      : null;
  const p99 = (s: Side) => ok(s) ? s.p99_ms as number : undefined;
  return {
    added_latency_ms: { mesh: added(l.mesh), haproxy: added(l.haproxy) },
    p99_mesh_vs_haproxy: ratio(p99(l.mesh), p99(l.haproxy)),
  };
}

/** The summary of `results` (keys tcp, h2, grpc; each side's result or `{unavailable}`). */
export function summary(results: Record<string, Load>): Record<string, unknown> {
  return {
    ...(results.tcp ? { tcp: tcp(results.tcp) } : {}),
    ...(results.h2 ? { h2: h2(results.h2) } : {}),
    ...(results.grpc ? { grpc: grpc(results.grpc) } : {}),
  };
}
