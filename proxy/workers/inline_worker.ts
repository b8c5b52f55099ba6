/**
 * The pool's one worker at `--concurrency 1`: the {@link DataPlane} on the main isolate, behind the
 * part of the Worker interface the pool uses, so that the pool, the listeners, snapshots, counters,
 * log levels and shutdown take the same code paths as with Worker isolates. A Worker isolate costs
 * about 20 MiB before its first connection (proxy/workers/README.md), and one worker gains nothing from
 * a thread of its own: the main isolate's agent and admin work is small.
 *
 * Differences from a Worker, by design: messages are not copied (a snapshot is shared, never mutated,
 * by the agent and the data plane) and arrive in a later microtask, never inside the sender's call;
 * the data plane has the process's permissions (read, env, sys, FFI to libc), where a Worker has
 * network and that FFI only; an error thrown while handling a message is reported through `onerror`
 * as a Worker's would be, but an uncaught error in a connection's callback ends the process, where it
 * would end only that Worker.
 *
 * @module
 */
import { DataPlane } from "./data_plane.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

/** What the pool uses of a Worker. */
export interface PoolWorker {
  onmessage: ((e: MessageEvent<FromWorker>) => void) | null;
  onerror: ((e: ErrorEvent) => void) | null;
  postMessage(m: ToWorker): void;
  terminate(): void;
}

/** A {@link DataPlane} on the calling isolate, as a {@link PoolWorker}. */
export class InlineWorker implements PoolWorker {
  onmessage: ((e: MessageEvent<FromWorker>) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  readonly #plane: DataPlane;
  #terminated = false;

  constructor() {
    this.#plane = new DataPlane((data) =>
      queueMicrotask(() => {
        if (!this.#terminated) this.onmessage?.(new MessageEvent("message", { data }));
      })
    );
  }

  /** Hands `m` to the data plane in a later microtask, as a Worker's port would. */
  postMessage(m: ToWorker): void {
    queueMicrotask(() => {
      if (this.#terminated) return;
      try {
        this.#plane.handle(m);
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        this.onerror?.(new ErrorEvent("error", { error, message: error.message }));
      }
    });
  }

  /** Stops delivering messages both ways (the pool has closed the listeners first). */
  terminate(): void {
    this.#terminated = true;
  }
}
