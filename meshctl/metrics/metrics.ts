/**
 * `meshctl experimental metrics <workload>[.<namespace>] ...` (meshctl seed 002, "experimental
 * metrics"; istioctl's `x metrics`): each workload's request rate, error rate and latency quantiles,
 * read from Prometheus as istioctl reads them.
 *
 * Prometheus is the first Running pod labelled `app=prometheus` (with an IP) in `-i/--meshNamespace`,
 * reached through a port-forward (meshctl/orch/port_forward.ts) to its container port (the first
 * declared `containerPort`, else Prometheus's 9090). The queries are Istio's standard metrics
 * (Istio docs "Istio Standard Metrics") as reported by the destination's proxy:
 * `istio_requests_total` and `istio_request_duration_milliseconds_bucket`.
 *
 * This mesh's proxy exports both (proxy/docs/admin.md "Istio standard metrics").
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient, type OrchClient } from "../orch/orch_client.ts";
import { openOrchPortForward } from "../orch/port_forward.ts";
import { parseGoDuration } from "../../shared/internal/cli/go_values.ts";

/** The label of Prometheus's pods (Istio's samples/addons/prometheus.yaml). */
export const PROMETHEUS_POD_LABEL = "app=prometheus";

/** Prometheus's default port. */
export const PROMETHEUS_PORT = 9090;

interface PodItem {
  metadata: { name: string };
  spec?: { containers?: { ports?: { containerPort?: number }[] }[] };
  status?: { podIP?: string; phase?: string };
}

/** One workload's figures: rates in requests per second, latencies in ms. */
export interface WorkloadMetrics {
  workload: string;
  totalRps: number;
  errorRps: number;
  p50: number;
  p90: number;
  p99: number;
}

/** A Prometheus duration (`1m`, `30s`, `1500ms`) of `ms` milliseconds. */
export function promDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${Math.round(ms)}ms`;
}

/** The PromQL queries of one workload, in the order of {@link WorkloadMetrics}' numbers. */
export function metricsQueries(workload: string, namespace: string, duration: string): string[] {
  const sel = (extra: string) =>
    `{reporter="destination",destination_workload=~"${workload}",` +
    `destination_workload_namespace=~"${namespace}"${extra}}[${duration}]`;
  const quantile = (q: number) =>
    `histogram_quantile(${q}, sum(rate(istio_request_duration_milliseconds_bucket${sel("")})) by (le))`;
  return [
    `sum(rate(istio_requests_total${sel("")}))`,
    `sum(rate(istio_requests_total${sel(`,response_code=~"[45][0-9]{2}"`)}))`,
    quantile(0.5),
    quantile(0.9),
    quantile(0.99),
  ];
}

/** `<name>[.<namespace>]`, the namespace defaulting to `fallback`. */
export function splitWorkload(arg: string, fallback: string): { name: string; namespace: string } {
  const dot = arg.lastIndexOf(".");
  return dot > 0
    ? { name: arg.slice(0, dot), namespace: arg.slice(dot + 1) }
    : { name: arg, namespace: fallback };
}

/**
 * The first value of a Prometheus `/api/v1/query` answer (a vector or scalar); 0 when the vector is
 * empty or the value is NaN (no samples in the window).
 *
 * @throws Error with Prometheus's error, or when the answer has another shape
 */
export function firstValue(body: unknown, query: string): number {
  const b = body as {
    status?: string;
    error?: string;
    data?: { resultType?: string; result?: unknown };
  };
  if (b?.status !== "success") throw new Error(`Prometheus: ${query}: ${b?.error ?? "no success status"}`);
  const result = b.data?.result;
  let value: unknown;
  if (b.data?.resultType === "scalar" && Array.isArray(result)) value = result[1];
  else if (b.data?.resultType === "vector" && Array.isArray(result)) {
    if (result.length === 0) return 0;
    value = (result[0] as { value?: unknown[] }).value?.[1];
  } else throw new Error(`Prometheus: ${query}: unexpected result type ${b.data?.resultType}`);
  const n = Number(value);
  if (typeof value !== "string" || value === "") throw new Error(`Prometheus: ${query}: no value`);
  return Number.isNaN(n) ? 0 : n;
}

/** istioctl's table: right-aligned, rates with 3 decimals, latencies in whole ms. */
export function metricsTable(rows: WorkloadMetrics[]): string {
  const head = ["WORKLOAD", "TOTAL RPS", "ERROR RPS", "P50 LATENCY", "P90 LATENCY", "P99 LATENCY"];
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(i === 0 ? 40 : 12)).join(" ") + "\n";
  const ms = (v: number) => `${Math.trunc(v)}ms`;
  return line(head) +
    rows.map((r) =>
      line([r.workload, r.totalRps.toFixed(3), r.errorRps.toFixed(3), ms(r.p50), ms(r.p90), ms(r.p99)])
    ).join("");
}

/**
 * The Running Prometheus pod of the mesh namespace and its port.
 *
 * @throws Error "Prometheus is not installed in namespace <ns>" when there is none
 */
export async function prometheusPod(orch: OrchClient): Promise<{ name: string; port: number }> {
  const ns = orch.meshNamespace;
  const pods = await orch.api.json<{ items: PodItem[] }>("GET", `/api/v1/namespaces/${ns}/pods`, {
    query: { labelSelector: PROMETHEUS_POD_LABEL },
  });
  const pod = pods.items.find((p) => p.status?.podIP && p.status.phase === "Running");
  if (!pod) throw new Error(`Prometheus is not installed in namespace ${ns}`);
  const declared = pod.spec?.containers?.flatMap((c) => c.ports ?? []).find((p) => p.containerPort);
  return { name: pod.metadata.name, port: declared?.containerPort ?? PROMETHEUS_PORT };
}

async function query(base: string, promql: string): Promise<number> {
  const res = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: promql })}`, {
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`Prometheus: ${promql}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  return firstValue(body, promql);
}

/** Builds `metrics`. */
export function metricsCommand(io: CliIo): CommandUnknownOpts {
  return new Command("metrics")
    .description(
      "Print each workload's request rate, error rate and P50/P90/P99 latency from the Prometheus in " +
        "-i's namespace (Istio's standard metrics, reporter=destination).",
    )
    .argument("<workloads...>", "<workload>[.<namespace>] (namespace default: -n's)")
    .option("-d, --duration <duration>", "the rate window (Go duration)", "1m")
    .action(async (workloads, opts, command) => {
      const d = parseGoDuration(opts.duration);
      if (!d.ok || d.value <= 0) {
        throw new Error(`--duration: "${opts.duration}" ${d.ok ? "must be positive" : d.reason}`);
      }
      const orch = commandOrchClient(command);
      try {
        let pod;
        try {
          pod = await prometheusPod(orch);
        } catch (e) {
          io.stderr(`Error: ${(e as Error).message}\n`);
          io.setExitCode(1);
          return;
        }
        const forward = await openOrchPortForward(orch, orch.meshNamespace, pod.name, pod.port);
        try {
          const rows: WorkloadMetrics[] = [];
          for (const arg of workloads) {
            const w = splitWorkload(arg, orch.namespace);
            const values: number[] = [];
            for (const q of metricsQueries(w.name, w.namespace, promDuration(d.value))) {
              values.push(await query(`http://${forward.localAddress}`, q));
            }
            const [totalRps, errorRps, p50, p90, p99] = values;
            rows.push({ workload: w.name, totalRps, errorRps, p50, p90, p99 });
          }
          io.stdout(metricsTable(rows));
        } finally {
          await forward.close();
        }
      } finally {
        await orch.close();
      }
    });
}
