/**
 * A pull-style view of a node:net or node:tls socket for the forwarding loops: `read()` returns the
 * next received chunk synchronously when there is one (no promise per chunk), `wait()` only when
 * there is none; `write()` reports backpressure and `drain()` waits it out. Received chunks are the
 * Buffers node hands out, never reused, so a chunk can be written to the other socket as it is.
 *
 * Reading pauses the socket when more than `highWater` bytes are queued, so a slow writer on the
 * other side holds back the sender through TCP flow control instead of buffering the body. It pauses
 * with ../tcp/relay.ts `pauseReading`: a node:tls socket paused with `pause()` loses the peer's FIN in
 * Deno 2.9.
 *
 * @module
 */
import type { Socket } from "node:net";
import { pauseReading, resumeReading } from "../tcp/relay.ts";

const EMPTY: Uint8Array[] = [];

/** One socket, read by at most one loop and written by at most one loop at a time. */
export class SocketIo {
  /** The socket (node:net or node:tls). */
  readonly socket: Socket;
  /** The peer's FIN arrived (after any queued data). */
  ended = false;
  /** The socket is closed. */
  closed = false;
  /** The socket failed; read() throws it once the queue is empty. */
  error: Error | null = null;
  /** Bytes received so far. */
  bytesIn = 0;
  /**
   * When data first arrived since this was last set to 0 (ms since the epoch), 0 if none has: the
   * session clears it when it starts waiting for a request head, so it tells when the head began.
   */
  dataAt = 0;
  /** Destroyed when this socket closes: the other side of an exchange or a tunnel. */
  peer: SocketIo | null = null;
  /** Called once when the socket closes (connection tracking, pool eviction). */
  onClose: ((io: SocketIo) => void) | null = null;
  readonly #highWater: number;
  #queue: Uint8Array[] = [];
  #head = 0;
  #queued = 0;
  #paused = false;
  #pushback: Uint8Array | null = null;
  #discard = false;
  #wake: (() => void) | null = null;
  #drainWake: (() => void) | null = null;
  #lingerTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(socket: Socket, highWater = 64 * 1024) {
    this.socket = socket;
    this.#highWater = highWater;
    socket.on("data", this.#onData);
    socket.on("end", this.#onEnd);
    socket.on("error", this.#onError);
    socket.on("close", this.#onClose);
    socket.on("drain", this.#onDrain);
    // A socket paused to sniff its first byte stays paused until resumed explicitly.
    resumeReading(socket);
  }

  #onData = (chunk: Uint8Array): void => {
    this.bytesIn += chunk.length;
    if (this.dataAt === 0) this.dataAt = Date.now();
    if (this.#discard) return;
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued > this.#highWater && !this.#paused) {
      this.#paused = true;
      pauseReading(this.socket);
    }
    this.#notify();
  };

  #onEnd = (): void => {
    this.ended = true;
    this.#notify();
    if (this.#discard) this.#destroyAfterFlush();
  };

  #destroyAfterFlush(): void {
    if (this.socket.writableFinished) this.destroy();
    else this.socket.once("finish", () => this.destroy());
  }

  #onError = (err: Error): void => {
    if (this.error === null) this.error = err;
    this.#notify();
  };

  #onClose = (): void => {
    this.closed = true;
    this.#stopLinger();
    this.#notify();
    const d = this.#drainWake;
    if (d !== null) {
      this.#drainWake = null;
      d();
    }
    const peer = this.peer;
    if (peer !== null) {
      this.peer = null;
      peer.destroy();
    }
    const cb = this.onClose;
    if (cb !== null) {
      this.onClose = null;
      cb(this);
    }
  };

  #onDrain = (): void => {
    const d = this.#drainWake;
    if (d !== null) {
      this.#drainWake = null;
      d();
    }
  };

  #notify(): void {
    const w = this.#wake;
    if (w !== null) {
      this.#wake = null;
      w();
    }
  }

  /** Whether a chunk, the end or an error is ready for {@link read}. */
  get readable(): boolean {
    return this.#pushback !== null || this.#head < this.#queue.length || this.ended || this.closed ||
      this.error !== null;
  }

  /** Bytes received and not yet read (including a pushed-back chunk). */
  get pending(): number {
    return this.#queued + (this.#pushback === null ? 0 : this.#pushback.length);
  }

  /**
   * The next chunk; null at the end of the stream; undefined when nothing is there yet (then
   * await {@link wait}). The chunk may be written elsewhere as it is.
   *
   * @throws the socket's error, once received data is exhausted
   */
  read(): Uint8Array | null | undefined {
    const pb = this.#pushback;
    if (pb !== null) {
      this.#pushback = null;
      return pb;
    }
    const q = this.#queue;
    if (this.#head < q.length) {
      const c = q[this.#head];
      q[this.#head++] = EMPTY as unknown as Uint8Array;
      if (this.#head === q.length) {
        this.#queue = [];
        this.#head = 0;
      }
      this.#queued -= c.length;
      if (this.#paused && this.#queued <= this.#highWater >> 1) {
        this.#paused = false;
        if (!this.closed) resumeReading(this.socket);
      }
      return c;
    }
    if (this.error !== null) throw this.error;
    if (this.ended || this.closed) return null;
    return undefined;
  }

  /** Puts back the unread tail of the chunk last read; it is returned by the next {@link read}. */
  unread(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#pushback = chunk;
  }

  /** Resolves when {@link read} has something to return (or {@link interrupt} is called). */
  wait(): Promise<void> {
    if (this.readable) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Wakes a pending {@link wait} without data (to cancel a loop). */
  interrupt(): void {
    this.#notify();
  }

  /**
   * Writes a chunk, which must not be modified afterwards. Returns false when the socket's buffer
   * is full: await {@link drain} before writing more.
   *
   * @throws when the socket is closed
   */
  write(chunk: Uint8Array): boolean {
    if (this.closed || this.socket.destroyed) throw new Error("connection closed");
    return this.socket.write(chunk);
  }

  /** Whether writes are past the socket's high-water mark (await {@link drain}). */
  get needsDrain(): boolean {
    return !this.closed && this.socket.writableNeedDrain;
  }

  /** Resolves when the socket's write buffer has drained, or the socket closed. */
  drain(): Promise<void> {
    if (this.closed || !this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#drainWake = resolve;
    });
  }

  /** Coalesces the writes until {@link uncork} into one (writev). */
  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  /** Ends the write side (FIN after queued writes); the read side stays open. */
  end(): void {
    if (!this.closed) this.socket.end();
  }

  /** Closes at once. */
  destroy(): void {
    this.#stopLinger();
    if (!this.closed) this.socket.destroy();
  }

  /** Closes with a TCP reset (SO_LINGER 0): the peer sees "connection reset by peer". */
  reset(): void {
    this.#stopLinger();
    if (this.closed) return;
    const s = this.socket as Socket & { resetAndDestroy?: () => void };
    if (typeof s.resetAndDestroy === "function") s.resetAndDestroy();
    else s.destroy();
  }

  /**
   * Writes `last` (if any), sends FIN, and keeps reading and discarding until the peer closes or
   * `timeoutMs` passes, so that data the client is still sending does not make the kernel answer
   * with a reset that could destroy the response before the client reads it.
   */
  lingerClose(last: Uint8Array | null, timeoutMs = 2000): void {
    if (this.closed) return;
    this.#discard = true;
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    this.#pushback = null;
    if (this.#paused) {
      this.#paused = false;
      resumeReading(this.socket);
    }
    if (last !== null) this.socket.end(last);
    else this.socket.end();
    if (this.ended) this.#destroyAfterFlush();
    // A second lingering close (a timeout while a reply lingers) keeps the first one's deadline and timer:
    // a timer replaced here was never cleared and outlived the socket.
    this.#lingerTimer ??= setTimeout(() => this.destroy(), timeoutMs);
  }

  /** Clears the linger timer: the socket closes (or closed) by other means. */
  #stopLinger(): void {
    if (this.#lingerTimer === undefined) return;
    clearTimeout(this.#lingerTimer);
    this.#lingerTimer = undefined;
  }
}
