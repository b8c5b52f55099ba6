/**
 * The pull-style socket view of the forwarding loops ({@link SocketIo}) and its node:net / node:tls
 * implementation ({@link NodeSocketIo}); the one over a `Deno.Conn` is ./deno_conn_io.ts (README.md
 * "Socket views").
 *
 * `read()` returns the next received chunk synchronously when there is one (no promise per chunk),
 * `wait()` only when there is none; `write()` reports backpressure and `drain()` waits it out.
 * Received chunks are never overwritten, so a chunk can be written to the other socket as it is.
 *
 * Reading pauses the socket when more than `highWater` bytes are queued, so a slow writer on the
 * other side holds back the sender through TCP flow control instead of buffering the body. The node
 * view pauses with ../tcp/relay.ts `pauseReading`: a node:tls socket paused with `pause()` loses the
 * peer's FIN in Deno 2.9.
 *
 * @module
 */
import type { Socket } from "node:net";
import { pauseReading, resumeReading } from "../tcp/relay.ts";

/** One connection, read by at most one loop and written by at most one loop at a time. */
export interface SocketIo {
  /** The peer's FIN arrived (after any queued data). */
  readonly ended: boolean;
  /** The connection is closed. */
  readonly closed: boolean;
  /** The connection failed; read() throws it once the queue is empty. */
  readonly error: Error | null;
  /** Bytes received so far. */
  readonly bytesIn: number;
  /** Bytes handed to the kernel (or the TLS layer) so far. */
  readonly bytesOut: number;
  /**
   * When data first arrived since this was last set to 0 (ms since the epoch), 0 if none has: the
   * session clears it when it starts waiting for a request head, so it tells when the head began.
   */
  dataAt: number;
  /** Destroyed when this connection closes: the other side of an exchange or a tunnel. */
  peer: SocketIo | null;
  /** Called once when the connection closes (connection tracking, pool eviction). */
  onClose: ((io: SocketIo) => void) | null;
  /** Whether a chunk, the end or an error is ready for {@link read}. */
  readonly readable: boolean;
  /** Bytes received and not yet read (including a pushed-back chunk). */
  readonly pending: number;
  /**
   * The next chunk; null at the end of the stream; undefined when nothing is there yet (then
   * await {@link wait}). The chunk may be written elsewhere as it is.
   *
   * @throws the connection's error, once received data is exhausted
   */
  read(): Uint8Array | null | undefined;
  /** Puts back the unread tail of the chunk last read; it is returned by the next {@link read}. */
  unread(chunk: Uint8Array): void;
  /** Resolves when {@link read} has something to return (or {@link interrupt} is called). */
  wait(): Promise<void>;
  /** Wakes a pending {@link wait} without data (to cancel a loop). */
  interrupt(): void;
  /**
   * Writes a chunk, which must not be modified afterwards. Returns false when the write buffer is
   * full: await {@link drain} before writing more.
   *
   * @throws when the connection is closed
   */
  write(chunk: Uint8Array): boolean;
  /** Whether writes are past the high-water mark (await {@link drain}). */
  readonly needsDrain: boolean;
  /** Resolves when the write buffer has drained, or the connection closed. */
  drain(): Promise<void>;
  /** Coalesces the writes until {@link uncork} into one. */
  cork(): void;
  uncork(): void;
  /** Ends the write side (FIN after queued writes); the read side stays open. */
  end(): void;
  /** Closes at once. */
  destroy(): void;
  /**
   * Writes `last` (if any), sends FIN, and keeps reading and discarding until the peer closes or
   * `timeoutMs` passes, so that data the client is still sending does not make the kernel answer
   * with a reset that could destroy the response before the client reads it.
   */
  lingerClose(last: Uint8Array | null, timeoutMs?: number): void;
  /**
   * Resolves when the operations under way after a close have finished (./deno_conn_io.ts); a node
   * socket has none to wait for.
   */
  settled?(): Promise<void>;
}

const EMPTY = new Uint8Array(0);

/**
 * The read side every {@link SocketIo} shares: the queue of received chunks, the pushed-back tail, the
 * waiter, the close callbacks and the lingering close's deadline. A subclass feeds it ({@link received},
 * {@link ended}, {@link error}), stops its transport from reading above `highWater` bytes queued, and
 * resumes it in {@link lowWater}.
 */
export abstract class QueuedIo implements SocketIo {
  ended = false;
  closed = false;
  error: Error | null = null;
  bytesIn = 0;
  dataAt = 0;
  peer: SocketIo | null = null;
  onClose: ((io: SocketIo) => void) | null = null;
  /** Bytes queued unread above which the subclass stops reading. */
  protected readonly highWater: number;
  /** A lingering close: received data is counted and dropped. */
  protected discard = false;
  #queue: Uint8Array[] = [];
  #head = 0;
  #queued = 0;
  #pushback: Uint8Array | null = null;
  #wake: (() => void) | null = null;
  #drainWake: (() => void) | null = null;
  #lingerTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(highWater: number) {
    this.highWater = highWater;
  }

  abstract readonly bytesOut: number;
  abstract readonly needsDrain: boolean;
  abstract write(chunk: Uint8Array): boolean;
  abstract drain(): Promise<void>;
  abstract cork(): void;
  abstract uncork(): void;
  abstract end(): void;
  abstract destroy(): void;
  abstract lingerClose(last: Uint8Array | null, timeoutMs?: number): void;

  /** Called by {@link read} when it took the queue to half the high-water mark or less. */
  protected abstract lowWater(): void;

  /** Queues a received chunk (dropped while lingering) and wakes the reader. */
  protected received(chunk: Uint8Array): void {
    this.bytesIn += chunk.length;
    if (this.dataAt === 0) this.dataAt = Date.now();
    if (this.discard) return;
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    this.notify();
  }

  /** Bytes queued unread (without a pushed-back chunk). */
  protected get queued(): number {
    return this.#queued;
  }

  /** Drops what is queued: a lingering close reads only to discard. */
  protected dropQueue(): void {
    this.discard = true;
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    this.#pushback = null;
  }

  /** Wakes a pending {@link wait}. */
  protected notify(): void {
    const w = this.#wake;
    if (w !== null) {
      this.#wake = null;
      w();
    }
  }

  /** Resolves a pending {@link drain}. */
  protected drained(): void {
    const d = this.#drainWake;
    if (d !== null) {
      this.#drainWake = null;
      d();
    }
  }

  /** A promise that {@link drained} (or the close) resolves. */
  protected untilDrained(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#drainWake = resolve;
    });
  }

  /** The connection closed: wakes waiters, destroys the linked peer, calls onClose once. */
  protected closedNow(): void {
    this.closed = true;
    this.stopLinger();
    this.notify();
    this.drained();
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
  }

  /**
   * Destroys the connection after `timeoutMs` unless it closed before. A second lingering close (a
   * timeout while a reply lingers) keeps the first one's deadline and timer: a timer replaced here was
   * never cleared and outlived the socket.
   */
  protected lingerDeadline(timeoutMs: number): void {
    this.#lingerTimer ??= setTimeout(() => this.destroy(), timeoutMs);
  }

  /** Clears the linger timer: the connection closes (or closed) by other means. */
  protected stopLinger(): void {
    if (this.#lingerTimer === undefined) return;
    clearTimeout(this.#lingerTimer);
    this.#lingerTimer = undefined;
  }

  get readable(): boolean {
    return this.#pushback !== null || this.#head < this.#queue.length || this.ended || this.closed ||
      this.error !== null;
  }

  get pending(): number {
    return this.#queued + (this.#pushback === null ? 0 : this.#pushback.length);
  }

  read(): Uint8Array | null | undefined {
    const pb = this.#pushback;
    if (pb !== null) {
      this.#pushback = null;
      return pb;
    }
    const q = this.#queue;
    if (this.#head < q.length) {
      const c = q[this.#head];
      q[this.#head++] = EMPTY;
      if (this.#head === q.length) {
        this.#queue = [];
        this.#head = 0;
      }
      this.#queued -= c.length;
      if (this.#queued <= this.highWater >> 1) this.lowWater();
      return c;
    }
    if (this.error !== null) throw this.error;
    if (this.ended || this.closed) return null;
    return undefined;
  }

  unread(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#pushback = chunk;
  }

  wait(): Promise<void> {
    if (this.readable) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  interrupt(): void {
    this.notify();
  }
}

/** {@link SocketIo} over a node:net or node:tls socket (or any node Duplex). */
export class NodeSocketIo extends QueuedIo {
  /** The socket (node:net or node:tls). */
  readonly socket: Socket;
  #paused = false;

  constructor(socket: Socket, highWater = 64 * 1024) {
    super(highWater);
    this.socket = socket;
    socket.on("data", this.#onData);
    socket.on("end", this.#onEnd);
    socket.on("error", this.#onError);
    socket.on("close", this.#onClose);
    socket.on("drain", this.#onDrain);
    // A socket paused to sniff its first byte stays paused until resumed explicitly.
    resumeReading(socket);
  }

  /**
   * Gives the socket up (to another codec): its listeners are removed and reading paused; what was
   * received and not read stays here ({@link read} it first).
   */
  detach(): void {
    const s = this.socket;
    s.off("data", this.#onData);
    s.off("end", this.#onEnd);
    s.off("error", this.#onError);
    s.off("close", this.#onClose);
    s.off("drain", this.#onDrain);
    pauseReading(s);
  }

  #onData = (chunk: Uint8Array): void => {
    this.received(chunk);
    if (this.queued > this.highWater && !this.#paused) {
      this.#paused = true;
      pauseReading(this.socket);
    }
  };

  #onEnd = (): void => {
    this.ended = true;
    this.notify();
    if (this.discard) this.#destroyAfterFlush();
  };

  #destroyAfterFlush(): void {
    if (this.socket.writableFinished) this.destroy();
    else this.socket.once("finish", () => this.destroy());
  }

  #onError = (err: Error): void => {
    if (this.error === null) this.error = err;
    this.notify();
  };

  #onClose = (): void => this.closedNow();

  #onDrain = (): void => this.drained();

  protected lowWater(): void {
    if (!this.#paused) return;
    this.#paused = false;
    if (!this.closed) resumeReading(this.socket);
  }

  /** Bytes written to the socket so far. */
  get bytesOut(): number {
    return this.socket.bytesWritten;
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
    return this.untilDrained();
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
    this.stopLinger();
    if (!this.closed) this.socket.destroy();
  }

  /** Closes with a TCP reset (SO_LINGER 0): the peer sees "connection reset by peer". */
  reset(): void {
    this.stopLinger();
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
    this.dropQueue();
    this.lowWater();
    if (last !== null) this.socket.end(last);
    else this.socket.end();
    if (this.ended) this.#destroyAfterFlush();
    this.lingerDeadline(timeoutMs);
  }
}
