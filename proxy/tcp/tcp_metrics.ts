/**
 * Istio's standard TCP metrics (Istio docs "Istio Standard Metrics"), per label set:
 * `istio_tcp_connections_opened_total`, `istio_tcp_connections_closed_total`,
 * `istio_tcp_received_bytes_total` (bytes from the downstream, the request side) and
 * `istio_tcp_sent_bytes_total` (bytes to the downstream, the response side). Labels are those of the
 * request metrics (../http/istio_metrics.ts `ISTIO_LABELS`, `request_protocol="tcp"`) plus
 * `response_flags`. One {@link IstioTcpMetrics} per worker thread; the admin server merges the
 * workers' snapshots ({@link mergeIstioTcpSeries}) and prints them ({@link formatIstioTcpPrometheus}).
 * Bytes count as they are relayed (Istio reports them periodically during the connection).
 *
 * @module
 */
import { escapeLabel, ISTIO_LABELS, type IstioLabels, MAX_LABEL_SETS } from "../http/istio_metrics.ts";

/** One label set's TCP series as a worker reports it (structured-clone safe). */
export interface IstioTcpSeries {
  /** Values of `ISTIO_LABELS`, in order. */
  labels: string[];
  opened: number;
  closed: number;
  receivedBytes: number;
  sentBytes: number;
}

/** The counters of one label set; a connection holds it and counts into it. */
export class TcpLabelSet {
  #opened = 0;
  #closed = 0;
  #received = 0;
  #sent = 0;

  constructor(readonly values: readonly string[]) {}

  opened(): void {
    this.#opened++;
  }
  closed(): void {
    this.#closed++;
  }
  /** `n` bytes from the downstream. */
  received(n: number): void {
    this.#received += n;
  }
  /** `n` bytes to the downstream. */
  sent(n: number): void {
    this.#sent += n;
  }

  /** The series, for a snapshot. */
  series(): IstioTcpSeries {
    return {
      labels: [...this.values],
      opened: this.#opened,
      closed: this.#closed,
      receivedBytes: this.#received,
      sentBytes: this.#sent,
    };
  }
}

/** The TCP label sets of one worker (at most `MAX_LABEL_SETS`; further peers count as source `unknown`). */
export class IstioTcpMetrics {
  readonly #sets = new Map<string, TcpLabelSet>();

  /** The interned set of `labels` (`request_protocol` is set to `tcp`); call it per connection. */
  labels(labels: IstioLabels): TcpLabelSet {
    const tcp = { ...labels, request_protocol: "tcp" };
    let values = ISTIO_LABELS.map((k) => tcp[k]);
    if (this.#sets.size >= MAX_LABEL_SETS && !this.#sets.has(values.join("\n"))) {
      values = ISTIO_LABELS.map((k) => k.startsWith("source_") ? "unknown" : tcp[k]);
    }
    const key = values.join("\n");
    let set = this.#sets.get(key);
    if (set === undefined) {
      set = new TcpLabelSet(values);
      this.#sets.set(key, set);
    }
    return set;
  }

  /** Every series. */
  snapshot(): IstioTcpSeries[] {
    return [...this.#sets.values()].map((s) => s.series());
  }
}

/** Sums the workers' series with equal labels, sorted by labels. */
export function mergeIstioTcpSeries(all: IstioTcpSeries[]): IstioTcpSeries[] {
  const merged = new Map<string, IstioTcpSeries>();
  for (const s of all) {
    const key = s.labels.join("\n");
    const m = merged.get(key);
    if (m === undefined) {
      merged.set(key, { ...s, labels: [...s.labels] });
      continue;
    }
    m.opened += s.opened;
    m.closed += s.closed;
    m.receivedBytes += s.receivedBytes;
    m.sentBytes += s.sentBytes;
  }
  return [...merged.values()].sort((a, b) => a.labels.join(",").localeCompare(b.labels.join(",")));
}

const METRICS: [string, keyof Omit<IstioTcpSeries, "labels">][] = [
  ["istio_tcp_connections_opened_total", "opened"],
  ["istio_tcp_connections_closed_total", "closed"],
  ["istio_tcp_received_bytes_total", "receivedBytes"],
  ["istio_tcp_sent_bytes_total", "sentBytes"],
];

/** Prometheus text exposition 0.0.4 of the merged series (nothing when there are none). */
export function formatIstioTcpPrometheus(series: IstioTcpSeries[]): string {
  if (series.length === 0) return "";
  const labelsOf = (s: IstioTcpSeries): string =>
    [...ISTIO_LABELS.map((k, i) => [k, s.labels[i]]), ["response_flags", "-"]]
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",");
  let out = "";
  for (const [name, field] of METRICS) {
    out += `# TYPE ${name} counter\n`;
    for (const s of series) out += `${name}{${labelsOf(s)}} ${s[field]}\n`;
  }
  return out;
}
