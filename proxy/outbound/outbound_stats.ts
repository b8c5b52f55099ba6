/**
 * The outbound listener's events and their counters: connections, upstream connections by mutual
 * TLS or plain text, the proxy's own replies by reason, and the gateway's TLS handshakes, on top of
 * the session's and the connection limits' events.
 *
 * @module
 */
import type { LimitObserver } from "../http/conn_limits.ts";
import type { SessionObserver } from "../http/session_types.ts";
import { SESSION_COUNTERS, SessionStats } from "../http/session_stats.ts";

/** Events of an outbound listener. Calls are synchronous and must be cheap. */
export interface OutboundObserver extends SessionObserver, LimitObserver {
  connectionOpened(): void;
  connectionClosed(): void;
  /** A new upstream connection, over mutual TLS or plain text. */
  upstreamConnection(mtls: boolean): void;
  /** A connection served (downstream) or made (upstream) with HTTP/2. */
  http2Connection(side: "downstream" | "upstream"): void;
  /** A proxy answer instead of a forwarded response. */
  localReply(kind: LocalReplyKind): void;
  /** Gateway HTTPS listeners: a TLS handshake that completed, failed, or found no server for its SNI. */
  downstreamTls(outcome: "handshake" | "handshake_error" | "no_filter_chain_match"): void;
  /**
   * A captured connection's TCP event, counted as Envoy's tcp_proxy counts it per stat prefix
   * (`tcp.<cluster>.<counter>`; the cluster is `outbound|<port>||<host>`, PassthroughCluster or
   * BlackHoleCluster): `n` is 1, or bytes for the `*_bytes_total` counters.
   */
  tcp(cluster: string, counter: TcpCounter, n: number): void;
}

/** The per-route TCP counters (Envoy tcp_proxy statistics, plus the connect failures of the route). */
export type TcpCounter =
  | "downstream_cx_total"
  | "downstream_cx_rx_bytes_total"
  | "downstream_cx_tx_bytes_total"
  | "downstream_cx_no_route"
  | "upstream_cx_connect_fail"
  | "idle_timeout";

/** Why the proxy answered itself. */
export type LocalReplyKind =
  | "bad_request"
  | "bad_authority"
  | "no_route"
  | "no_healthy_upstream"
  | "no_certificate"
  | "connect_failure"
  | "tls_failure"
  | "identity_mismatch"
  | "timeout";

/** Counter names of {@link OutboundStats}: its own, then the session counters. */
export const OUTBOUND_COUNTERS = [
  "downstream_cx_total",
  "downstream_cx_active",
  "downstream_rq_local_reply",
  "upstream_cx_total",
  "upstream_cx_mtls_total",
  "upstream_cx_plaintext_total",
  "upstream_cx_connect_timeout",
  "ssl.connection_error",
  "ssl.fail_verify_san",
  "no_route",
  "upstream_cx_none_healthy",
  "ssl.handshake",
  "ssl.handshake_error",
  "no_filter_chain_match",
  "downstream_cx_http2_total",
  "upstream_cx_http2_total",
  ...SESSION_COUNTERS,
] as const;

const TLS_COUNTERS = {
  handshake: "ssl.handshake",
  handshake_error: "ssl.handshake_error",
  no_filter_chain_match: "no_filter_chain_match",
} as const;

/** Envoy-style counters of an outbound listener. */
export class OutboundStats extends SessionStats<(typeof OUTBOUND_COUNTERS)[number]>
  implements OutboundObserver {
  constructor() {
    super(OUTBOUND_COUNTERS);
  }

  connectionOpened(): void {
    this.counters.downstream_cx_total++;
    this.counters.downstream_cx_active++;
  }
  connectionClosed(): void {
    this.counters.downstream_cx_active--;
  }
  upstreamConnection(mtls: boolean): void {
    this.counters.upstream_cx_total++;
    if (mtls) this.counters.upstream_cx_mtls_total++;
    else this.counters.upstream_cx_plaintext_total++;
  }
  http2Connection(side: "downstream" | "upstream"): void {
    this.counters[side === "downstream" ? "downstream_cx_http2_total" : "upstream_cx_http2_total"]++;
  }
  localReply(kind: LocalReplyKind): void {
    this.counters.downstream_rq_local_reply++;
    switch (kind) {
      case "no_route":
      case "bad_authority":
        this.counters.no_route++;
        break;
      case "no_healthy_upstream":
      case "no_certificate":
        this.counters.upstream_cx_none_healthy++;
        break;
      case "connect_failure":
        this.counters.upstream_cx_connect_fail++;
        break;
      case "timeout":
        this.counters.upstream_cx_connect_timeout++;
        break;
      case "tls_failure":
        this.counters["ssl.connection_error"]++;
        break;
      case "identity_mismatch":
        this.counters["ssl.fail_verify_san"]++;
        break;
    }
  }
  downstreamTls(outcome: "handshake" | "handshake_error" | "no_filter_chain_match"): void {
    this.counters[TLS_COUNTERS[outcome]]++;
  }
  readonly #tcp = new Map<string, number>();
  tcp(cluster: string, counter: TcpCounter, n: number): void {
    const name = `tcp.${cluster}.${counter}`;
    this.#tcp.set(name, (this.#tcp.get(name) ?? 0) + n);
  }
  snapshot(): Record<string, number> {
    const out: Record<string, number> = { ...this.counters };
    for (const [k, v] of this.#tcp) out[k] = v;
    return out;
  }
}
