/**
 * {@link SessionStats}: the counters of what every HTTP session reports ({@link SessionObserver}),
 * named after Envoy's HTTP connection manager and cluster statistics. The inbound and outbound
 * listeners' stats extend it with their own connection counters.
 *
 * @module
 */
import type { SessionObserver, UpstreamErrorKind } from "./session_types.ts";
import { LIMIT_COUNTERS, type LimitKind, type LimitObserver } from "./conn_limits.ts";

/** The counters {@link SessionStats} keeps for every listener. */
export const SESSION_COUNTERS = [
  "downstream_rq_total",
  "downstream_rq_1xx",
  "downstream_rq_2xx",
  "downstream_rq_3xx",
  "downstream_rq_4xx",
  "downstream_rq_5xx",
  "upstream_cx_connect_fail",
  "upstream_rq_reset_before_response",
  "upstream_rq_reset_during_response",
  "upstream_rq_protocol_error",
  "upstream_rq_timeout",
  "upstream_rq_retry",
  "downstream_cx_upgrades_total",
  ...Object.values(LIMIT_COUNTERS),
] as const;

/** One counter of {@link SESSION_COUNTERS}. */
export type SessionCounter = typeof SESSION_COUNTERS[number];

const UPSTREAM_ERROR_COUNTERS: Record<UpstreamErrorKind, SessionCounter> = {
  connect_failure: "upstream_cx_connect_fail",
  reset_before_response: "upstream_rq_reset_before_response",
  reset_during_response: "upstream_rq_reset_during_response",
  protocol_error: "upstream_rq_protocol_error",
  timeout: "upstream_rq_timeout",
};

/** Session counters, plus the listener's own `N` (plain numbers; read them any time). */
export class SessionStats<N extends string> implements SessionObserver, LimitObserver {
  readonly counters: Record<N | SessionCounter, number>;

  /** @param names the listener's counters; the session counters are added to them */
  constructor(names: readonly N[]) {
    const all = [...names, ...SESSION_COUNTERS];
    this.counters = Object.fromEntries(all.map((n) => [n, 0])) as Record<N | SessionCounter, number>;
  }

  request(): void {
    this.counters.downstream_rq_total++;
  }

  response(status: number, _local: boolean): void {
    const c = this.counters;
    if (status < 200) c.downstream_rq_1xx++;
    else if (status < 300) c.downstream_rq_2xx++;
    else if (status < 400) c.downstream_rq_3xx++;
    else if (status < 500) c.downstream_rq_4xx++;
    else c.downstream_rq_5xx++;
  }

  upstreamError(kind: UpstreamErrorKind): void {
    this.counters[UPSTREAM_ERROR_COUNTERS[kind]]++;
  }

  retry(): void {
    this.counters.upstream_rq_retry++;
  }

  upgrade(): void {
    this.counters.downstream_cx_upgrades_total++;
  }

  limitHit(kind: LimitKind): void {
    this.counters[LIMIT_COUNTERS[kind]]++;
  }
}
