/**
 * The two timers of a proxied HTTP/2 stream, as Envoy runs them for every request:
 *
 * - the request timeout (the listener's `--requestTimeout`, Envoy's HTTP connection manager
 *   `request_timeout`): from the stream's request head until the whole request was received (the
 *   client's END_STREAM) or the response head was sent downstream (`ActiveStream::onRequestTimeout`);
 * - the upstream timeout (the route timeout, or `grpc-timeout`: ../grpc/grpc_timeout.ts): from the
 *   whole request received (the router's `onRequestComplete`, so a streaming request's deadline runs
 *   from the client's half-close) until the upstream response ended (`onUpstreamComplete`), also
 *   after the response head (`onResponseTimeout`).
 *
 * Node timers cannot run longer than 2^31-1 ms (about 24.8 days); a longer timeout sets no timer.
 *
 * @module
 */
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";

/** The timeouts a relay applies to one stream (ms; 0 none). */
export interface StreamTimeouts {
  /** The listener's `--requestTimeout` (Envoy's `request_timeout`); 0 off. */
  requestTimeoutMs: number;
  /** The route's timeout (VirtualService `http[].timeout`); 0 none. */
  routeTimeoutMs: number;
  /** Counts a request timeout (the listener's `downstream_rq_timeout`). */
  onRequestTimeout?: () => void;
}

/** Which timer expired. */
export type StreamTimeoutKind = "request" | "upstream";

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs the timers of one downstream stream; {@link done} stops both for good. */
export class StreamTimers {
  #request: ReturnType<typeof setTimeout> | undefined;
  #upstream: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  /** Whether a timer can run at all (a timeout is set); when not, nothing is watched. */
  readonly active: boolean;

  /**
   * @param down the downstream stream (its END_STREAM ends the request timer and starts the upstream one)
   * @param requestTimeoutMs 0: no request timer
   * @param upstreamTimeoutMs 0: no upstream timer
   * @param expired called once, with the timer that expired first; both timers are then stopped
   */
  constructor(
    down: Http2Stream,
    requestTimeoutMs: number,
    upstreamTimeoutMs: number,
    expired: (kind: StreamTimeoutKind) => void,
  ) {
    this.active = requestTimeoutMs > 0 || upstreamTimeoutMs > 0;
    // Most streams have no timeout: then not even the stream's trailers promise is made.
    if (!this.active) return;
    const fire = (kind: StreamTimeoutKind) => {
      if (this.#done) return;
      this.done();
      expired(kind);
    };
    const requestComplete = () => {
      if (this.#done) return;
      clearTimeout(this.#request);
      if (upstreamTimeoutMs > 0 && upstreamTimeoutMs <= MAX_TIMER_MS) {
        this.#upstream = setTimeout(() => fire("upstream"), upstreamTimeoutMs);
      }
    };
    if (down.remoteEnded) {
      requestComplete();
      return;
    }
    if (requestTimeoutMs > 0 && requestTimeoutMs <= MAX_TIMER_MS) {
      this.#request = setTimeout(() => fire("request"), requestTimeoutMs);
    }
    down.trailers.then(requestComplete, () => this.done());
  }

  /** The response head was sent downstream: the request timer stops (Envoy disarms it then). */
  responseStarted(): void {
    clearTimeout(this.#request);
  }

  /** The stream is over (the upstream response ended, a local reply, a reset): no timer fires. */
  done(): void {
    this.#done = true;
    clearTimeout(this.#request);
    clearTimeout(this.#upstream);
  }
}
