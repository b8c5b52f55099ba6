/**
 * The downstream HTTP/2 connections of one listener, and the listener's idle timeout for them
 * (Envoy's `common_http_protocol_options.idle_timeout`: a connection without an open stream for that
 * long is closed, with a graceful GOAWAY). The HTTP/1.1 path's sweep (../http/conn_limits.ts) does
 * the same for its connections.
 *
 * @module
 */
import type { Http2Connection } from "../../shared/internal/http2/connection.ts";

/** Open downstream connections and when each last had no stream. */
export class DownstreamSet {
  readonly #idleSince = new Map<Http2Connection, number>();

  /** Open connections. */
  get size(): number {
    return this.#idleSince.size;
  }

  /** Tracks a connection until it closes. */
  add(connection: Http2Connection): void {
    this.#idleSince.set(connection, Date.now());
    connection.closed.then(() => this.#idleSince.delete(connection));
  }

  /** Closes (GOAWAY NO_ERROR) the connections without a stream for `idleTimeoutMs` (0: never). */
  sweep(now: number, idleTimeoutMs: number): number {
    let closed = 0;
    for (const [c, since] of this.#idleSince) {
      if (c.activeStreams > 0) this.#idleSince.set(c, now);
      else if (idleTimeoutMs > 0 && now - since >= idleTimeoutMs && !c.draining) {
        c.close();
        closed++;
      }
    }
    return closed;
  }

  /** Closes every connection. */
  close(): void {
    for (const c of this.#idleSince.keys()) c.close();
    this.#idleSince.clear();
  }
}
