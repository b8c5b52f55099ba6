/**
 * Limits of a listener against slow or greedy clients (Envoy's HTTP connection manager
 * `request_headers_timeout`, `request_timeout` and `common_http_protocol_options.idle_timeout`, and
 * a listener connection limit as Envoy's `envoy.resource_limits.listener.<name>.connection_limit`),
 * shared by the inbound, outbound and gateway listeners. See proxy/docs/limits.md for the defaults and
 * why they were chosen.
 *
 * - {@link ConnectionSlots}: the open connections of one listener, counted in a SharedArrayBuffer
 *   that every worker thread's copy of the listener shares, so the limit holds for the listener as a
 *   whole, however the kernel spreads connections over the workers (Envoy's limit is per listener
 *   across its workers too).
 * - {@link ConnectionClock}: what a listener's periodic sweep decides about one connection.
 *
 * @module
 */
import { encodeLocalReply } from "./encode.ts";
import type { SessionObserver } from "./session_types.ts";
import type { SocketIo } from "./socket_io.ts";

/** The limits of one listener. A timeout of 0 disables it; a `maxConnections` of 0 means no limit. */
export interface ListenerLimits {
  /**
   * ms for a complete request head: counted from the accept for a connection's first request (the
   * TLS handshake included), and from the head's first byte for later requests on the connection.
   */
  requestHeadersTimeoutMs: number;
  /**
   * ms for a whole request, head and body, counted from the head's first byte until the body's last
   * byte was received or the response began (Envoy's `request_timeout`).
   */
  requestTimeoutMs: number;
  /** ms without a byte received or sent on the downstream connection, between or during requests. */
  idleTimeoutMs: number;
  /** Open downstream connections of the listener (all workers together); more are closed at accept. */
  maxConnections: number;
}

/** The defaults (proxy/README.md, "Limits", says why). */
export const DEFAULT_LISTENER_LIMITS: Readonly<ListenerLimits> = Object.freeze({
  requestHeadersTimeoutMs: 10_000,
  requestTimeoutMs: 0,
  idleTimeoutMs: 300_000,
  maxConnections: 10_000,
});

/** Which limit a connection met. */
export type LimitKind = "overflow" | "header_timeout" | "request_timeout" | "idle_timeout";

/** Counts what the limits did. */
export interface LimitObserver {
  limitHit(kind: LimitKind): void;
}

/** Envoy's counter names for {@link LimitKind}. */
export const LIMIT_COUNTERS = {
  overflow: "downstream_cx_overflow",
  header_timeout: "downstream_rq_header_timeout",
  request_timeout: "downstream_rq_timeout",
  idle_timeout: "downstream_cx_idle_timeout",
} as const;

/**
 * A counter of open connections that `workers` workers share: the listener's total, then each
 * worker's own share, so that the connections of a worker that died can be taken off the total
 * ({@link releaseWorker}).
 */
export function newConnectionCounter(workers = 1): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * (1 + workers));
}

/** Takes the connections a dead worker held off the listener's total (they closed with it). */
export function releaseWorker(shared: SharedArrayBuffer, worker: number): void {
  const c = new Int32Array(shared);
  Atomics.sub(c, 0, Atomics.exchange(c, 1 + worker, 0));
}

/** A listener's counter shared by the workers that run it, and which of them this copy is. */
export interface SharedConnectionCounter {
  /** From {@link newConnectionCounter}. */
  buffer: SharedArrayBuffer;
  /** This worker's index in it. */
  worker: number;
}

/** The open connections of one listener, bounded by `max` (0: unbounded, still counted). */
export class ConnectionSlots {
  readonly max: number;
  readonly #count: Int32Array;
  readonly #mine: number;

  /**
   * @param shared the counter the listener's copies in other workers share; a private one when absent
   * @throws RangeError when the counter has no place for `shared.worker`
   */
  constructor(max: number, shared?: SharedConnectionCounter) {
    this.max = max;
    this.#count = new Int32Array(shared?.buffer ?? newConnectionCounter());
    this.#mine = 1 + (shared?.worker ?? 0);
    if (this.#mine >= this.#count.length) throw new RangeError(`no counter for worker ${shared?.worker}`);
  }

  /** Takes a slot for a new connection; false when the listener is full (close the connection). */
  acquire(): boolean {
    const after = Atomics.add(this.#count, 0, 1) + 1;
    if (this.max > 0 && after > this.max) {
      Atomics.sub(this.#count, 0, 1);
      return false;
    }
    Atomics.add(this.#count, this.#mine, 1);
    return true;
  }

  /** Gives back the slot of a closed connection. */
  release(): void {
    Atomics.sub(this.#count, this.#mine, 1);
    Atomics.sub(this.#count, 0, 1);
  }

  /** Open connections of the listener in every worker. */
  get count(): number {
    return Atomics.load(this.#count, 0);
  }
}

/** {@link ConnectionClock.check}: nothing to do. */
export const KEEP = 0;
/** No complete request head in time: answer 408 if a byte of it came, else close. */
export const HEADERS_TIMED_OUT = 1;
/** Nothing received or sent for the idle timeout: close. */
export const IDLE_TIMED_OUT = 2;
/** The request (head and body) not received in time, and no response begun: 408, upstream reset. */
export const REQUEST_TIMED_OUT = 3;

/** What the sweep needs from a connection's HTTP session. */
export interface SessionClock {
  /** When the session started waiting for a request head (ms since the epoch), 0 while busy. */
  readonly waitingSince: number;
  /** Request heads completed on the connection so far. */
  readonly heads: number;
  /**
   * When the request whose body is being received began (its head's first byte, ms since the
   * epoch); 0 when there is none, once its body is complete, and once its response has begun.
   */
  readonly requestSince: number;
}

/** What {@link closeForLimit} does to a session. */
export interface LimitedSession extends SessionClock {
  /** The request timed out: stop forwarding it and reset its upstream exchange (the caller answers). */
  abortRequest(): void;
}

/** What the sweep reads of a connection's socket (a {@link SocketIo} has it). */
export interface ConnectionActivity {
  /** Bytes received so far. */
  readonly bytesIn: number;
  /** When data first arrived since the session began waiting for a head, 0 if none has. */
  readonly dataAt: number;
  /** Bytes sent so far. */
  readonly bytesOut: number;
}

/** The timers of one downstream connection, advanced by its listener's sweep. */
export class ConnectionClock {
  /** When the connection was accepted (ms since the epoch). */
  readonly acceptedAt: number;
  #activeAt: number;
  #bytes = 0;

  constructor(acceptedAt: number) {
    this.acceptedAt = acceptedAt;
    this.#activeAt = acceptedAt;
  }

  /**
   * What to do with the connection at `now`.
   *
   * @param io the HTTP connection, null before it is served (first byte, TLS handshake)
   * @param session its session, null before it is served
   * @returns {@link KEEP}, {@link HEADERS_TIMED_OUT}, {@link REQUEST_TIMED_OUT} or {@link IDLE_TIMED_OUT}
   */
  check(
    now: number,
    io: ConnectionActivity | null,
    session: SessionClock | null,
    limits: ListenerLimits,
  ): number {
    const headers = limits.requestHeadersTimeoutMs;
    const idle = limits.idleTimeoutMs;
    if (io === null || session === null) {
      // Nothing is sent before the session starts: the idle timeout runs from the accept too.
      if (headers > 0 && now - this.acceptedAt >= headers) return HEADERS_TIMED_OUT;
      return idle > 0 && now - this.acceptedAt >= idle ? IDLE_TIMED_OUT : KEEP;
    }
    const bytes = io.bytesIn + io.bytesOut;
    if (bytes !== this.#bytes) {
      this.#bytes = bytes;
      this.#activeAt = now;
    }
    if (headers > 0 && session.waitingSince !== 0) {
      const start = session.heads === 0 ? this.acceptedAt : io.dataAt;
      if (start !== 0 && now - start >= headers) return HEADERS_TIMED_OUT;
    }
    const request = limits.requestTimeoutMs;
    if (request > 0) {
      const start = session.waitingSince !== 0 ? io.dataAt : session.requestSince;
      if (start !== 0 && now - start >= request) return REQUEST_TIMED_OUT;
    }
    return idle > 0 && now - this.#activeAt >= idle ? IDLE_TIMED_OUT : KEEP;
  }
}

/** How often a listener sweeps: a quarter of its shortest timeout, between 100 ms and 1 s. */
export function sweepIntervalMs(limits: ListenerLimits): number {
  const timeouts = [limits.requestHeadersTimeoutMs, limits.requestTimeoutMs, limits.idleTimeoutMs]
    .filter((t) => t > 0);
  if (timeouts.length === 0) return 1000;
  return Math.min(1000, Math.max(100, Math.floor(Math.min(...timeouts) / 4)));
}

/** The counter of a timeout verdict of {@link ConnectionClock.check}. */
export function limitKindOf(verdict: number): LimitKind {
  if (verdict === HEADERS_TIMED_OUT) return "header_timeout";
  return verdict === REQUEST_TIMED_OUT ? "request_timeout" : "idle_timeout";
}

/** Which timeout a verdict of {@link ConnectionClock.check} is, for logs. */
export function timeoutName(verdict: number): string {
  if (verdict === HEADERS_TIMED_OUT) return "request headers";
  return verdict === REQUEST_TIMED_OUT ? "request" : "idle";
}

const HEADER_TIMEOUT_REPLY = encodeLocalReply(408, "request header timeout", true);
const REQUEST_TIMEOUT_REPLY = encodeLocalReply(408, "request timeout", true);

/**
 * Closes a served connection that met a timeout of {@link ConnectionClock.check}, as Envoy does: a
 * request head that began gets 408 `request header timeout` (and the connection closes); one that
 * did not begin, or an idle connection between requests, is closed with a FIN; a request not
 * received in time gets 408 `request timeout` (Envoy's `onRequestTimeout`) and its upstream request is
 * reset at once, so the application stops waiting for the rest of its body; a connection idle in the
 * middle of an exchange (no byte either way: a stalled body or upstream) is destroyed with its
 * upstream connection.
 */
export function closeForLimit(
  verdict: number,
  io: SocketIo,
  session: LimitedSession,
  observer: LimitObserver & SessionObserver,
): void {
  observer.limitHit(limitKindOf(verdict));
  if (verdict === REQUEST_TIMED_OUT) {
    session.abortRequest();
    observer.response(408, true);
    io.lingerClose(REQUEST_TIMEOUT_REPLY);
    return;
  }
  if (verdict === HEADERS_TIMED_OUT) {
    if (io.dataAt !== 0) {
      observer.response(408, true);
      io.lingerClose(HEADER_TIMEOUT_REPLY);
    } else io.lingerClose(null);
    return;
  }
  if (session.waitingSince !== 0) io.lingerClose(null);
  else io.destroy();
}
