/**
 * `/stats` and `/stats/prometheus`: the workers' inbound counters summed per listener (and the
 * connection counters per worker), the inbound cluster's upstream counters, and a few server and
 * control-plane gauges, named as Envoy names them. See proxy/docs/admin.md.
 *
 * @module
 */
import type { WorkerCounters } from "../workers/pool.ts";
import { inboundClusterName } from "./config_dump.ts";

/** One statistic. */
export interface Stat {
  /** Envoy's dotted name, e.g. `listener.10.0.0.5_8080.downstream_cx_total`. */
  name: string;
  value: number;
  type: "counter" | "gauge";
  /** Prometheus: metric name (with the `envoy_` prefix) and labels. */
  prom: string;
  labels: Record<string, string>;
}

/** The server-wide values. */
export interface ServerStats {
  concurrency: number;
  uptimeSeconds: number;
  /** Envoy's server.state: 0 LIVE, 1 DRAINING, 2 PRE_INITIALIZING, 3 INITIALIZING. */
  state: number;
  controlPlaneConnected: boolean;
  /** NotAfter of the workload certificate, ms since the epoch. */
  certificateNotAfter?: number;
  /** The proxy's own JWKS fetches (providers meshd marks `jwksFetcher: PROXY`). */
  jwksFetch?: { success: number; failed: number };
  now: number;
}

const GAUGES = new Set(["downstream_cx_active"]);
/** The per-worker connection stats Envoy keeps (`listener.<address>.worker_<n>.*`). */
const PER_WORKER = ["downstream_cx_total", "downstream_cx_active"];

function promName(s: string): string {
  return s.replace(/[^a-zA-Z0-9_]/g, "_");
}

/**
 * The statistics, sorted by name.
 *
 * @param listeners the inbound listeners, for their address (port -> bind address)
 */
export function collectStats(
  workers: WorkerCounters[],
  listeners: { address: string; port: number; direction?: "inbound" | "outbound" }[],
  server: ServerStats,
): Stat[] {
  const stats: Stat[] = [];
  const add = (s: Stat) => stats.push(s);
  for (const l of listeners) {
    const address = `${l.address}_${l.port}`;
    const cluster = inboundClusterName(l.port);
    const sums = new Map<string, number>();
    for (const w of workers) {
      const counters = w.listeners.find((x) => x.port === l.port)?.counters ?? {};
      for (const [k, value] of Object.entries(counters)) sums.set(k, (sums.get(k) ?? 0) + value);
      for (const k of PER_WORKER) {
        add({
          name: `listener.${address}.worker_${w.worker}.${k}`,
          value: counters[k] ?? 0,
          type: GAUGES.has(k) ? "gauge" : "counter",
          prom: `envoy_listener_worker_${k}`,
          labels: { envoy_listener_address: address, envoy_worker_id: String(w.worker) },
        });
      }
    }
    for (const [k, value] of sums) {
      const type = GAUGES.has(k) ? "gauge" : "counter";
      const tcp = /^tcp\.(.+)\.([a-z_]+)$/.exec(k);
      if (tcp !== null) {
        // The outbound listener's TCP routes, as Envoy's tcp_proxy names them (stat prefix = cluster).
        add({ name: k, value, type, prom: `envoy_tcp_${tcp[2]}`, labels: { envoy_tcp_prefix: tcp[1] } });
      } else if (k.startsWith("upstream_") && l.direction !== "outbound") {
        add({
          name: `cluster.${cluster}.${k}`,
          value,
          type,
          prom: `envoy_cluster_${promName(k)}`,
          labels: { envoy_cluster_name: cluster },
        });
      } else {
        add({
          name: `listener.${address}.${k}`,
          value,
          type,
          prom: `envoy_listener_${promName(k)}`,
          labels: { envoy_listener_address: address },
        });
      }
    }
  }
  const gauge = (name: string, value: number) =>
    add({ name, value, type: "gauge", prom: `envoy_${promName(name)}`, labels: {} });
  gauge("server.concurrency", server.concurrency);
  gauge("server.live", server.state === 0 ? 1 : 0);
  gauge("server.state", server.state);
  gauge("server.uptime", Math.floor(server.uptimeSeconds));
  gauge("control_plane.connected_state", server.controlPlaneConnected ? 1 : 0);
  if (server.certificateNotAfter !== undefined) {
    gauge(
      "server.days_until_first_cert_expiring",
      Math.max(0, Math.floor((server.certificateNotAfter - server.now) / 86_400_000)),
    );
  }
  // Envoy's jwt_authn statistics, without its `http.<stat_prefix>.` (one fetcher per process here).
  for (
    const [name, value] of [["success", server.jwksFetch?.success], ["failed", server.jwksFetch?.failed]]
  ) {
    add({
      name: `jwt_authn.jwks_fetch_${name}`,
      value: Number(value ?? 0),
      type: "counter",
      prom: `envoy_jwt_authn_jwks_fetch_${name}`,
      labels: {},
    });
  }
  return stats.sort((a, b) => a.name.localeCompare(b.name));
}

/** Envoy's text format: `name: value`, one per line. */
export function formatText(stats: Stat[], filter?: RegExp): string {
  return stats.filter((s) => !filter || filter.test(s.name)).map((s) => `${s.name}: ${s.value}\n`).join("");
}

/** `{"stats": [{"name": ..., "value": ...}]}`, as Envoy's `?format=json`. */
export function formatJson(stats: Stat[], filter?: RegExp): string {
  const list = stats.filter((s) => !filter || filter.test(s.name)).map((s) => ({
    name: s.name,
    value: s.value,
  }));
  return JSON.stringify({ stats: list }, null, 2) + "\n";
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Prometheus text exposition 0.0.4: one `# TYPE` per metric, then its samples. */
export function formatPrometheus(stats: Stat[]): string {
  const byMetric = new Map<string, Stat[]>();
  for (const s of stats) byMetric.set(s.prom, [...(byMetric.get(s.prom) ?? []), s]);
  let out = "";
  for (const [metric, samples] of [...byMetric].sort(([a], [b]) => a.localeCompare(b))) {
    out += `# TYPE ${metric} ${samples[0].type}\n`;
    for (const s of samples) {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",");
      out += `${metric}${labels ? `{${labels}}` : ""} ${s.value}\n`;
    }
  }
  return out;
}
