/**
 * What an inbound listener reports, and {@link InboundStats}, the counters an admin `/stats` page
 * reads. Names follow Envoy's listener, HTTP connection manager, TLS, tcp_proxy (`tcp.*`), RBAC
 * network filter (`rbac.*`) and cluster statistics where one exists (`downstream_cx_total`,
 * `ssl.handshake`, `upstream_cx_connect_fail`, ...).
 *
 * @module
 */
import type { SessionObserver } from "../http/session_types.ts";
import type { LimitObserver } from "../http/conn_limits.ts";
import { SESSION_COUNTERS, SessionStats } from "../http/session_stats.ts";
import type { RelayDirection, RelayResult } from "../tcp/relay.ts";

/** Why a connection was refused before any request. */
export type RefusalReason =
  /** Plain text on a STRICT port: answered with a TCP reset. */
  | "plaintext_in_strict"
  /** TLS arrived but the proxy has no workload certificate yet. */
  | "no_certificate"
  /** The TLS handshake failed (no client certificate, unknown CA, protocol error). */
  | "handshake_failed"
  /** The client certificate has no SPIFFE ID of the mesh's trust domain. */
  | "untrusted_identity"
  /** Nothing (or no complete handshake) within the handshake timeout. */
  | "timeout";

/** Events of an inbound listener. Calls are synchronous and must be cheap. */
export interface InboundObserver extends SessionObserver, LimitObserver {
  /** A TCP connection was accepted. */
  connectionOpened(): void;
  /** An accepted TCP connection closed (whatever happened to it). */
  connectionClosed(): void;
  /** A connection is served: over mutual TLS (after the handshake and identity check) or plain text. */
  connectionServed(kind: "mtls" | "plaintext"): void;
  connectionRefused(reason: RefusalReason): void;
  /** A TLS handshake finished (ok) or failed. */
  handshake(ok: boolean): void;
  /** A new connection to the application was made. */
  upstreamConnection(): void;
  /** A connection served (downstream) or made to the application (upstream) with HTTP/2. */
  http2Connection(side: "downstream" | "upstream"): void;
  /** A connection is carried as TCP (./dispatch.ts), before the L4 rules. */
  tcpConnection(): void;
  /** The L4 rules allowed or denied a TCP connection (Envoy's RBAC network filter). */
  tcpAuthorized(allowed: boolean): void;
  /** `n` bytes relayed on a TCP connection. */
  tcpBytes(direction: RelayDirection, n: number): void;
  /** A TCP relay ended. */
  tcpRelayed(result: RelayResult): void;
}

/** Counter names of {@link InboundStats}: its own, then the session counters. */
export const INBOUND_COUNTERS = [
  "downstream_cx_total",
  "downstream_cx_destroy",
  "downstream_cx_mtls_total",
  "downstream_cx_plaintext_total",
  "downstream_cx_refused_plaintext_in_strict",
  "downstream_cx_refused_no_certificate",
  "downstream_cx_refused_timeout",
  "ssl.handshake",
  "ssl.connection_error",
  "ssl.fail_verify_san",
  "downstream_rq_local_reply",
  "upstream_cx_total",
  "downstream_cx_http2_total",
  "upstream_cx_http2_total",
  "tcp.downstream_cx_total",
  "tcp.downstream_cx_rx_bytes_total",
  "tcp.downstream_cx_tx_bytes_total",
  "tcp.idle_timeout",
  "rbac.allowed",
  "rbac.denied",
  ...SESSION_COUNTERS,
] as const;

/** One counter name. */
export type InboundCounter = typeof INBOUND_COUNTERS[number];

/** Counters of one inbound listener (plain numbers; read them any time). */
export class InboundStats extends SessionStats<InboundCounter> implements InboundObserver {
  /** Open downstream connections (a gauge). */
  downstreamActive = 0;

  constructor() {
    super(INBOUND_COUNTERS);
  }

  connectionOpened(): void {
    this.counters.downstream_cx_total++;
    this.downstreamActive++;
  }

  connectionClosed(): void {
    this.counters.downstream_cx_destroy++;
    this.downstreamActive--;
  }

  connectionServed(kind: "mtls" | "plaintext"): void {
    if (kind === "mtls") this.counters.downstream_cx_mtls_total++;
    else this.counters.downstream_cx_plaintext_total++;
  }

  connectionRefused(reason: RefusalReason): void {
    switch (reason) {
      case "plaintext_in_strict":
        this.counters.downstream_cx_refused_plaintext_in_strict++;
        break;
      case "no_certificate":
        this.counters.downstream_cx_refused_no_certificate++;
        break;
      case "untrusted_identity":
        this.counters["ssl.fail_verify_san"]++;
        break;
      case "timeout":
        this.counters.downstream_cx_refused_timeout++;
        break;
      case "handshake_failed":
        // counted by handshake(false)
        break;
    }
  }

  handshake(ok: boolean): void {
    if (ok) this.counters["ssl.handshake"]++;
    else this.counters["ssl.connection_error"]++;
  }

  http2Connection(side: "downstream" | "upstream"): void {
    this.counters[side === "downstream" ? "downstream_cx_http2_total" : "upstream_cx_http2_total"]++;
  }
  upstreamConnection(): void {
    this.counters.upstream_cx_total++;
  }

  tcpConnection(): void {
    this.counters["tcp.downstream_cx_total"]++;
  }

  tcpAuthorized(allowed: boolean): void {
    this.counters[allowed ? "rbac.allowed" : "rbac.denied"]++;
  }

  tcpBytes(direction: RelayDirection, n: number): void {
    if (direction === "downstream_to_upstream") this.counters["tcp.downstream_cx_rx_bytes_total"] += n;
    else this.counters["tcp.downstream_cx_tx_bytes_total"] += n;
  }

  tcpRelayed(result: RelayResult): void {
    if (result.end === "idle_timeout") this.counters["tcp.idle_timeout"]++;
  }

  override response(status: number, local: boolean): void {
    super.response(status, local);
    if (local) this.counters.downstream_rq_local_reply++;
  }

  /** All counters and the active gauge, for an admin page. */
  snapshot(): Record<string, number> {
    return { ...this.counters, downstream_cx_active: this.downstreamActive };
  }
}
