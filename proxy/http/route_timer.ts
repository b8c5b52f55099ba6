/**
 * The route timeout of one HTTP/1.1 request (Envoy's router `timeout`, from a gateway route's
 * VirtualService `http[].timeout`): armed when the whole request was sent upstream (the router's
 * `onRequestComplete`), stopped when the response ended (or the exchange ended otherwise). On
 * expiry the upstream connection is destroyed (never given back to a pool) and {@link expired} is
 * set: before the response head the session answers Envoy's 504 `upstream request timeout`, after
 * it the client's connection is reset (HTTP/1.1 has no other way to end a started response).
 *
 * @module
 */
import type { SocketIo } from "./socket_io.ts";

const MAX_TIMER_MS = 2 ** 31 - 1;

/** One request's route timer; made only for requests whose route has a timeout. */
export class RouteTimer {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #up: SocketIo | null = null;
  /** The timeout fired during this exchange. */
  expired = false;

  /**
   * Starts the timer for the request sent on `up` (ms; 0, or over 2^31-1 ms: none). A later start
   * replaces the earlier one.
   */
  start(ms: number, up: SocketIo): void {
    this.stop();
    this.expired = false;
    if (ms <= 0 || ms > MAX_TIMER_MS) return;
    this.#up = up;
    this.#timer = setTimeout(() => {
      this.expired = true;
      this.#up?.destroy();
      this.#up = null;
    }, ms);
  }

  /**
   * {@link start} once the request body was sent: at once without one (`pumpDone` null), else when
   * `pumpDone` settles and `sent()` says the body was all sent on a connection still in use.
   */
  startWhenSent(ms: number, up: SocketIo, pumpDone: Promise<void> | null, sent: () => boolean): void {
    this.stop();
    if (pumpDone === null) return this.start(ms, up);
    pumpDone.then(() => {
      if (sent()) this.start(ms, up);
    });
  }

  /** The response ended, or the exchange did: nothing fires any more ({@link expired} cleared). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#up = null;
    this.expired = false;
  }
}
