/**
 * Istio's standard request metrics (Istio docs "Istio Standard Metrics"): `istio_requests_total`
 * (counter) and `istio_request_duration_milliseconds` (histogram, Istio's default buckets), per label
 * set. One {@link IstioMetrics} per worker thread; the admin server merges the workers' snapshots
 * ({@link mergeIstioSeries}) and prints them ({@link formatIstioPrometheus}).
 *
 * The hot path allocates nothing: a listener interns a {@link LabelSet} per connection (per peer and
 * destination), and {@link LabelSet.record} finds the series of a response code (and gRPC status) in
 * a Map keyed by a number. A gRPC request counts in the set's {@link LabelSet.grpc} twin
 * (`request_protocol="grpc"`, made once per set) with its `grpc_response_status`
 * (../grpc/grpc_status.ts); any other has `grpc_response_status=""`, as Istio's stats plugin. Cardinality is bounded: codes are clamped to 100..599 (else 0), paths are never labels, and
 * at most {@link MAX_LABEL_SETS} label sets are kept (further peers count under source labels
 * `unknown`).
 *
 * @module
 */
import type { SessionObserver, UpstreamErrorKind } from "./session_types.ts";
import { grpcStatusLabel, NO_GRPC_STATUS } from "../grpc/grpc_status.ts";

/** Istio's default buckets of istio_request_duration_milliseconds, in ms (the last bucket is +Inf). */
export const ISTIO_DURATION_BUCKETS_MS: readonly number[] = [
  0.5,
  1,
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000,
  2500,
  5000,
  10000,
  30000,
  60000,
  300000,
  600000,
  1800000,
  3600000,
];

/**
 * The labels of a {@link LabelSet}, in order; `response_code`, `response_flags` and
 * `grpc_response_status` are per series.
 */
export const ISTIO_LABELS = [
  "reporter",
  "source_workload",
  "source_workload_namespace",
  "source_principal",
  "destination_workload",
  "destination_workload_namespace",
  "destination_principal",
  "destination_service",
  "request_protocol",
  "connection_security_policy",
] as const;

/** Values of {@link ISTIO_LABELS}. */
export type IstioLabels = Record<typeof ISTIO_LABELS[number], string>;

/** Label sets kept per worker before new ones are folded into the overflow set. */
export const MAX_LABEL_SETS = 10_000;

/** One series as a worker reports it (structured-clone safe). */
export interface IstioSeries {
  /** Values of {@link ISTIO_LABELS}, in order. */
  labels: string[];
  /** HTTP status, 0 when outside 100..599. */
  code: number;
  /** `grpc_response_status`: the gRPC status, `-1` for an unusable one, `""` for none (not gRPC). */
  grpcStatus: string;
  /** Envoy's response flags (`-`: none). */
  flags: string;
  count: number;
  sumMs: number;
  /** Per bucket, NOT cumulative; one more than {@link ISTIO_DURATION_BUCKETS_MS} (+Inf). */
  buckets: number[];
}

class Series {
  constructor(readonly code: number, readonly grpcStatus: number) {}
  count = 0;
  sumMs = 0;
  readonly buckets = new Float64Array(ISTIO_DURATION_BUCKETS_MS.length + 1);
}

/** The interned series of one label set. */
export class LabelSet {
  readonly #byCode = new Map<number, Series>();
  #grpc: LabelSet | undefined;

  constructor(readonly values: readonly string[]) {}

  /**
   * The twin of this set with `request_protocol="grpc"`, for gRPC requests (made on first use; its
   * series are part of this set's {@link series}).
   */
  grpc(): LabelSet {
    if (this.#grpc === undefined) {
      const values = [...this.values];
      values[PROTOCOL] = "grpc";
      this.#grpc = new LabelSet(values);
    }
    return this.#grpc;
  }

  /**
   * Counts one response with status `code` that took `ms` milliseconds; `grpcStatus` is the gRPC
   * status of a gRPC response (-1: unusable; ../grpc/grpc_status.ts), absent for any other.
   */
  record(code: number, ms: number, grpcStatus: number = NO_GRPC_STATUS): void {
    const c = code >= 100 && code <= 599 ? code : 0;
    // 32 slots per code: NO_GRPC_STATUS (-2), -1 and 0..16.
    const key = c * 32 + grpcStatus - NO_GRPC_STATUS;
    let s = this.#byCode.get(key);
    if (s === undefined) {
      s = new Series(c, grpcStatus);
      this.#byCode.set(key, s);
    }
    s.count++;
    s.sumMs += ms;
    let i = 0;
    while (i < ISTIO_DURATION_BUCKETS_MS.length && ms > ISTIO_DURATION_BUCKETS_MS[i]) i++;
    s.buckets[i]++;
  }

  /** The series, for a snapshot. */
  series(): IstioSeries[] {
    const own = [...this.#byCode.values()].map((s) => ({
      labels: [...this.values],
      code: s.code,
      grpcStatus: grpcStatusLabel(s.grpcStatus),
      flags: "-",
      count: s.count,
      sumMs: s.sumMs,
      buckets: [...s.buckets],
    }));
    return this.#grpc === undefined ? own : [...own, ...this.#grpc.series()];
  }
}

const PROTOCOL = ISTIO_LABELS.indexOf("request_protocol");

/** The label sets of one worker. */
export class IstioMetrics {
  readonly #sets = new Map<string, LabelSet>();

  /** The interned set of `labels` (allocates a key string: call it per connection, not per request). */
  labels(labels: IstioLabels): LabelSet {
    let values = ISTIO_LABELS.map((k) => labels[k]);
    let key = values.join("\n");
    let set = this.#sets.get(key);
    if (set !== undefined) return set;
    if (this.#sets.size >= MAX_LABEL_SETS) {
      values = ISTIO_LABELS.map((k) => k.startsWith("source_") ? "unknown" : labels[k]);
      key = values.join("\n");
      set = this.#sets.get(key);
      if (set !== undefined) return set;
    }
    set = new LabelSet(values);
    this.#sets.set(key, set);
    return set;
  }

  /** Every series. */
  snapshot(): IstioSeries[] {
    return [...this.#sets.values()].flatMap((s) => s.series());
  }
}

/** Sums the workers' series with equal labels, code and flags. */
export function mergeIstioSeries(all: IstioSeries[]): IstioSeries[] {
  const merged = new Map<string, IstioSeries>();
  for (const s of all) {
    const key = `${s.labels.join("\n")}\n${s.code}\n${s.grpcStatus}\n${s.flags}`;
    const m = merged.get(key);
    if (m === undefined) {
      merged.set(key, { ...s, labels: [...s.labels], buckets: [...s.buckets] });
      continue;
    }
    m.count += s.count;
    m.sumMs += s.sumMs;
    s.buckets.forEach((b, i) => (m.buckets[i] += b));
  }
  return [...merged.values()].sort((a, b) => key(a).localeCompare(key(b)));
}

function key(s: IstioSeries): string {
  return `${s.labels.join(",")},${s.code},${s.grpcStatus}`;
}

/** A Prometheus label value, escaped (text exposition 0.0.4). */
export function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Prometheus text exposition 0.0.4 of the merged series (nothing when there are none). */
export function formatIstioPrometheus(series: IstioSeries[]): string {
  if (series.length === 0) return "";
  const labelsOf = (s: IstioSeries) =>
    [
      ...ISTIO_LABELS.map((k, i) => [k, s.labels[i]]),
      ["response_code", String(s.code)],
      ["response_flags", s.flags],
      ["grpc_response_status", s.grpcStatus],
    ].map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",");
  let out = "# TYPE istio_requests_total counter\n";
  for (const s of series) out += `istio_requests_total{${labelsOf(s)}} ${s.count}\n`;
  out += "# TYPE istio_request_duration_milliseconds histogram\n";
  for (const s of series) {
    const l = labelsOf(s);
    let cumulative = 0;
    for (const [i, b] of s.buckets.entries()) {
      cumulative += b;
      const le = i < ISTIO_DURATION_BUCKETS_MS.length ? String(ISTIO_DURATION_BUCKETS_MS[i]) : "+Inf";
      out += `istio_request_duration_milliseconds_bucket{${l},le="${le}"} ${cumulative}\n`;
    }
    out += `istio_request_duration_milliseconds_sum{${l}} ${s.sumMs}\n`;
    out += `istio_request_duration_milliseconds_count{${l}} ${s.count}\n`;
  }
  return out;
}

/**
 * A {@link SessionObserver} for one connection: forwards every event to the listener's observer and
 * counts each response in `labels` (an outbound connection sets it per request, at routing), timed from its request head to its response head (Istio's
 * duration runs to the last response byte; a streamed body is not included here).
 */
export class MeteredObserver implements SessionObserver {
  #start = 0;

  constructor(readonly inner: SessionObserver, public labels: LabelSet) {}

  request(): void {
    this.#start = performance.now();
    this.inner.request();
  }
  response(status: number, local: boolean): void {
    this.labels.record(status, this.#start === 0 ? 0 : performance.now() - this.#start);
    this.#start = 0;
    this.inner.response(status, local);
  }
  upstreamError(kind: UpstreamErrorKind): void {
    this.inner.upstreamError(kind);
  }
  retry(): void {
    this.inner.retry();
  }
  upgrade(): void {
    this.inner.upgrade();
  }
}
