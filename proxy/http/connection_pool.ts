/**
 * Keep-alive connections to one upstream, for inbound (to the application) and outbound (to a
 * service endpoint) alike: idle connections are reused last in, first out (the warmest first), at
 * most `maxIdle` are kept, and an idle connection that the peer closed, that received unexpected
 * bytes, or that idled longer than `idleTimeoutMs` is closed by {@link ConnectionPool.sweep}, which
 * the listeners call every second. How a connection is made (plain TCP, mutual TLS; node:net and
 * node:tls or Deno's own sockets) is the `dial` function's business.
 *
 * @module
 */
import type net from "node:net";
import type { Upstream } from "./session_types.ts";
import { NodeSocketIo, type SocketIo } from "./socket_io.ts";

/** Settings of a {@link ConnectionPool}. */
export interface ConnectionPoolOptions {
  /** Makes one connected (and, for TLS, verified) connection; rejects with the reason it could not. */
  dial: () => Promise<SocketIo>;
  /** The error for a connection asked of a closed pool. */
  closedError: () => Error;
  /** Idle connections kept. Default 64. */
  maxIdle?: number;
  /** An idle connection is closed after this long. Default 60 s. */
  idleTimeoutMs?: number;
  /** Called for each new connection (counters). */
  onConnect?: () => void;
}

/** The connection pool to one upstream. */
export class ConnectionPool implements Upstream {
  readonly #dial: () => Promise<SocketIo>;
  readonly #closedError: () => Error;
  readonly #maxIdle: number;
  readonly #idleTimeoutMs: number;
  readonly #onConnect: (() => void) | undefined;
  #idle: SocketIo[] = [];
  #idleSince: number[] = [];
  readonly #all = new Set<SocketIo>();
  #closed = false;

  constructor(options: ConnectionPoolOptions) {
    this.#dial = options.dial;
    this.#closedError = options.closedError;
    this.#maxIdle = options.maxIdle ?? 64;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.#onConnect = options.onConnect;
  }

  /** Idle connections now. */
  get idleCount(): number {
    return this.#idle.length;
  }

  /** Open connections (idle and lent). */
  get openCount(): number {
    return this.#all.size;
  }

  idle(): SocketIo | null {
    while (this.#idle.length > 0) {
      const io = this.#idle.pop()!;
      this.#idleSince.pop();
      if (io.closed || io.ended || io.error !== null || io.pending > 0) {
        io.destroy();
        continue;
      }
      return io;
    }
    return null;
  }

  /** A new connection; rejects with the dial's error, or `closedError()` once the pool is closed. */
  async connect(): Promise<SocketIo> {
    if (this.#closed) throw this.#closedError();
    const io = await this.#dial();
    if (this.#closed) {
      io.destroy();
      throw this.#closedError();
    }
    this.#all.add(io);
    io.onClose = (closed) => this.#all.delete(closed);
    this.#onConnect?.();
    return io;
  }

  release(io: SocketIo, reusable: boolean): void {
    io.peer = null;
    if (
      !reusable || this.#closed || io.closed || io.ended || io.error !== null || io.pending > 0 ||
      this.#idle.length >= this.#maxIdle
    ) {
      io.destroy();
      return;
    }
    this.#idle.push(io);
    this.#idleSince.push(Date.now());
  }

  /** Closes idle connections that ended, failed, received bytes, or idled too long. */
  sweep(now: number): void {
    if (this.#idle.length === 0) return;
    const keep: SocketIo[] = [];
    const since: number[] = [];
    for (let i = 0; i < this.#idle.length; i++) {
      const io = this.#idle[i];
      if (
        io.closed || io.ended || io.error !== null || io.pending > 0 ||
        now - this.#idleSince[i] > this.#idleTimeoutMs
      ) {
        io.destroy();
      } else {
        keep.push(io);
        since.push(this.#idleSince[i]);
      }
    }
    this.#idle = keep;
    this.#idleSince = since;
  }

  /** Closes every connection, idle or lent. */
  close(): Promise<void> {
    this.#closed = true;
    const settled: Promise<void>[] = [];
    for (const io of this.#all) {
      io.destroy();
      if (io.settled !== undefined) settled.push(io.settled());
    }
    this.#idle = [];
    this.#idleSince = [];
    return Promise.all(settled).then(() => {});
  }
}

/** A connected node:net or node:tls socket as a pooled connection (Nagle off: requests are written whole). */
export function pooledNodeSocket(socket: net.Socket): SocketIo {
  socket.setNoDelay(true);
  return new NodeSocketIo(socket);
}
