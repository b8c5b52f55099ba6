/**
 * The request body's copy from the downstream client to the upstream connection, which runs
 * concurrently with reading the response (so an application may answer before it has read the whole
 * body): Content-Length delimited or chunked (checked with a {@link ChunkedDecoder} as it is copied,
 * unchanged), with its outcome for the session to decide on the reply and on reusing connections.
 *
 * @module
 */
import { CHUNK_DONE, ChunkedDecoder } from "./chunked.ts";
import { HttpError } from "./http_head.ts";
import type { SocketIo } from "./socket_io.ts";
import { JOIN_LIMIT, writeHead } from "./body_copy.ts";
import type { HeadBytes } from "./encode.ts";

/** The request body: none, Content-Length delimited, chunked. */
export const B_EMPTY = 0;
export const B_LENGTH = 1;
export const B_CHUNKED = 2;

/** Where the request body's copy stands ({@link RequestBodyPump.state}). */
export const PUMP_NONE = 0;
export const PUMP_RUNNING = 1;
export const PUMP_OK = 2;
export const PUMP_BAD = 3;
export const PUMP_DOWN_FAILED = 4;
export const PUMP_UP_FAILED = 5;
export const PUMP_CANCELLED = 6;

/** One downstream connection's request-body copy, reused for every request of the connection. */
export class RequestBodyPump {
  /** PUMP_*: set to PUMP_RUNNING by the session when it starts {@link run}. */
  state = PUMP_NONE;
  /** The framing error of a bad chunked body (PUMP_BAD). */
  error: HttpError | null = null;
  /** Set to make a running copy stop at its next chunk or wait (PUMP_CANCELLED). */
  cancel = false;
  readonly #down: SocketIo;
  readonly #dec = new ChunkedDecoder(false, 400);
  readonly #onComplete: () => void;

  /** @param onComplete called when the whole body was copied */
  constructor(down: SocketIo, onComplete: () => void) {
    this.#down = down;
    this.#onComplete = onComplete;
  }

  /**
   * Writes the request head to `up` and starts the body's copy ({@link run}). The bytes of a
   * Content-Length body that arrived with the head (up to JOIN_LIMIT) are copied behind the head into
   * one write, as the response side does (./body_copy.ts: cheaper than a corked two-buffer write through
   * node's streams); other bodies go corked behind the head. Returns null when the whole body went with
   * the head ({@link state} is then PUMP_OK), else the copy.
   */
  start(up: SocketIo, head: HeadBytes, kind: number, length: number): Promise<void> | null {
    const down = this.#down;
    if (kind === B_LENGTH && down.pending > 0) {
      let c = down.read()!;
      if (c.length > length) {
        down.unread(c.subarray(length));
        c = c.subarray(0, length);
      }
      if (c.length <= JOIN_LIMIT) {
        writeHead(up, head, c);
        if (c.length < length) return this.run(up, kind, length - c.length);
        this.state = PUMP_OK;
        this.#onComplete();
        return null;
      }
      down.unread(c);
    }
    up.cork();
    try {
      writeHead(up, head);
      return this.run(up, kind, length);
    } finally {
      up.uncork();
    }
  }

  /** Copies the request body to `up`; the outcome is left in {@link state}. */
  async run(up: SocketIo, kind: number, length: number): Promise<void> {
    const down = this.#down;
    const dec = this.#dec;
    if (kind === B_CHUNKED) dec.reset();
    let remaining = length;
    try {
      for (;;) {
        const c = down.read();
        if (c === undefined) {
          await down.wait();
          if (this.cancel) {
            this.state = PUMP_CANCELLED;
            return;
          }
          continue;
        }
        if (c === null) {
          this.state = PUMP_DOWN_FAILED;
          up.destroy();
          return;
        }
        let stop = c.length;
        let done: boolean;
        if (kind === B_LENGTH) {
          if (stop >= remaining) stop = remaining;
          remaining -= stop;
          done = remaining === 0;
        } else {
          stop = dec.step(c, 0, c.length);
          done = dec.result === CHUNK_DONE;
        }
        if (stop < c.length) down.unread(c.subarray(stop));
        if (!up.write(stop === c.length ? c : c.subarray(0, stop))) await up.drain();
        if (done) {
          this.state = PUMP_OK;
          this.#onComplete();
          return;
        }
        if (this.cancel) {
          this.state = PUMP_CANCELLED;
          return;
        }
      }
    } catch (e) {
      if (e instanceof HttpError) {
        this.state = PUMP_BAD;
        this.error = e;
      } else this.state = up.closed ? PUMP_UP_FAILED : PUMP_DOWN_FAILED;
      up.destroy();
    }
  }

  /** Cancels a running copy (interrupting its wait for the client) and waits for it to end. */
  async stop(pumpDone: Promise<void> | null): Promise<void> {
    if (pumpDone === null) return;
    if (this.state === PUMP_RUNNING) {
      this.cancel = true;
      this.#down.interrupt();
    }
    await pumpDone;
  }
}
