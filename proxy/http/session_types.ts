/**
 * What an HTTP/1.1 session (session.ts) works with: the upstream pool it sends requests to, the
 * observer it reports to, the logger, the request filter that decides each request, and the
 * settings of one downstream connection.
 *
 * @module
 */
import type { FilterReply } from "./encode.ts";
import type { HeadLimits } from "./head.ts";
import type { HttpHead } from "./http_head.ts";
import type { SocketIo } from "./socket_io.ts";

export type { FilterReply };

/** Where requests go: a pool of keep-alive connections to one destination. */
export interface Upstream {
  /** An idle connection to reuse, or null (synchronous: no promise per request on the warm path). */
  idle(): SocketIo | null;
  /**
   * A new connection.
   *
   * @throws when it cannot be made
   */
  connect(): Promise<SocketIo>;
  /** Gives a connection back: kept for reuse when `reusable`, else closed. */
  release(io: SocketIo, reusable: boolean): void;
  /** The current request's route timeout (ms; 0 or absent: none), read once its head was routed. */
  readonly routeTimeoutMs?: number;
}

/** Why an upstream exchange failed (Envoy's reset reasons). */
export type UpstreamErrorKind =
  | "connect_failure"
  | "reset_before_response"
  | "reset_during_response"
  | "protocol_error"
  | "timeout";

/** What a session reports, for counters. Calls are synchronous and must be cheap. */
export interface SessionObserver {
  /** A request head was received and accepted. */
  request(): void;
  /** A response head was sent downstream; `local` for the proxy's own replies. */
  response(status: number, local: boolean): void;
  upstreamError(kind: UpstreamErrorKind): void;
  /** A request was retried on a fresh connection after a reused one closed before answering. */
  retry(): void;
  /** A 101 response turned the connection into a tunnel. */
  upgrade(): void;
}

/** The logger shape the data path uses (a meshd/proxy ScopeLogger fits). */
export interface Log {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** What a {@link RequestFilter} decided about one request. */
export interface FilterVerdict {
  /** A response to send instead of forwarding (401, 403, 400), or null to forward. */
  reply: FilterReply | null;
  /** Header lines (`name: value\r\n`...) to add to the forwarded request, or null. */
  addFields: Uint8Array | null;
  /** A request target to forward instead of the received one (normalized path), or null. */
  target: Uint8Array | null;
  /** A Host value to forward instead of the received Host (absolute-form authority); absent or null: as is. */
  host?: Uint8Array | null;
}

/**
 * Decides each request before it is forwarded (end-user authentication, authorization). It may
 * mark fields of the head to drop (`head.drop[i] = 1`). It returns a promise only when it has to
 * wait (verifying a token), so the common path costs none.
 */
export interface RequestFilter {
  /** null: forward unchanged. */
  check(head: HttpHead): FilterVerdict | null | Promise<FilterVerdict | null>;
}

/** Settings of one downstream connection. */
export interface SessionOptions {
  upstream: Upstream;
  observer: SessionObserver;
  log: Log;
  /** The client's address, for logs. */
  peer: string;
  /** The X-Forwarded-Client-Cert element of this connection's client (mutual TLS), or null (strip). */
  xfccElement: Uint8Array | null;
  /** Host sent upstream for an HTTP/1.0 request without one. */
  defaultHost: Uint8Array;
  limits?: HeadLimits;
  /** Decides requests before they are forwarded; null or absent: forward all. */
  filter?: RequestFilter | null;
  /**
   * Called when the connection's first head fails as HTTP/2.0 (505), with the chunk that failed: true
   * when it took the connection over (an h2c client: the HTTP/2 preface), false for the 505.
   */
  http2Preface?: (down: SocketIo, chunk: Uint8Array) => boolean;
}
