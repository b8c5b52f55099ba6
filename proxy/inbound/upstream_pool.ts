/**
 * Keep-alive connections from the proxy to its application: idle connections are reused last in,
 * first out (the warmest first), at most `maxIdle` are kept, and an idle connection that the
 * application closed, that received unexpected bytes, or that idled longer than `idleTimeoutMs` is
 * closed by {@link UpstreamPool.sweep}, which the listener calls every second.
 *
 * @module
 */
import net from "node:net";
import type { Upstream } from "../http/session.ts";
import { SocketIo } from "../http/socket_io.ts";

/** Settings of an {@link UpstreamPool}. */
export interface UpstreamPoolOptions {
  host: string;
  port: number;
  /** Idle connections kept. Default 64. */
  maxIdle?: number;
  /** An idle connection is closed after this long. Default 60 s. */
  idleTimeoutMs?: number;
  /** Connection attempts fail after this long. Default 10 s (Envoy's connect_timeout in Istio). */
  connectTimeoutMs?: number;
  /** Called for each new connection (counters). */
  onConnect?: () => void;
}

/** The connection pool to one application endpoint. */
export class UpstreamPool implements Upstream {
  readonly #host: string;
  readonly #port: number;
  readonly #maxIdle: number;
  readonly #idleTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #onConnect: (() => void) | undefined;
  #idle: SocketIo[] = [];
  #idleSince: number[] = [];
  readonly #all = new Set<SocketIo>();
  #closed = false;

  constructor(options: UpstreamPoolOptions) {
    this.#host = options.host;
    this.#port = options.port;
    this.#maxIdle = options.maxIdle ?? 64;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
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

  connect(): Promise<SocketIo> {
    if (this.#closed) return Promise.reject(new Error("upstream pool closed"));
    return this.#connect();
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
  close(): void {
    this.#closed = true;
    for (const io of this.#all) io.destroy();
    this.#idle = [];
    this.#idleSince = [];
  }

  #connect(): Promise<SocketIo> {
    return new Promise<SocketIo>((resolve, reject) => {
      const socket = net.connect({ host: this.#host, port: this.#port, allowHalfOpen: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect to ${this.#host}:${this.#port} timed out`));
      }, this.#connectTimeoutMs);
      const onError = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      socket.once("error", onError);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.off("error", onError);
        if (this.#closed) {
          socket.destroy();
          reject(new Error("upstream pool closed"));
          return;
        }
        socket.setNoDelay(true);
        const io = new SocketIo(socket);
        this.#all.add(io);
        io.onClose = (closed) => this.#all.delete(closed);
        this.#onConnect?.();
        resolve(io);
      });
    });
  }
}
