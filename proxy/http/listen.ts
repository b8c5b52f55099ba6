/**
 * Binding a node:net server for a listener: the start-up error rejects, later errors go to `onError`
 * (a listener must not crash the proxy), and `reusePort` asks for SO_REUSEPORT so that every worker
 * thread can bind the same port (Deno's node:net honours it).
 *
 * @module
 */
import type net from "node:net";

/** Where and how to bind. */
export interface ListenOptions {
  address: string;
  /** 0 picks a free port. */
  port: number;
  reusePort?: boolean;
}

/**
 * Binds the server.
 *
 * @returns the bound port
 * @throws the bind error (EADDRINUSE, EACCES, ...)
 */
export function listen(
  server: net.Server,
  options: ListenOptions,
  onError: (err: Error) => void,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    const reuse = options.reusePort ? { reusePort: true, exclusive: false } : {};
    server.listen({ host: options.address, port: options.port, ...reuse }, () => {
      server.off("error", reject);
      server.on("error", onError);
      const addr = server.address();
      resolve(typeof addr === "object" && addr !== null ? addr.port : options.port);
    });
  });
}

/**
 * The sockets a listener accepted and that are not closed yet, so that the listener's close() can
 * close every one and return only once each has emitted "close": a socket's own timers (a lingering
 * close, a ClientHello deadline) are cleared by its close, so none outlives the listener.
 */
export class AcceptedSockets {
  readonly #open = new Map<net.Socket, Promise<void>>();

  /** Tracks `raw` until it closes. */
  add(raw: net.Socket): void {
    const closed = new Promise<void>((resolve) =>
      raw.once("close", () => {
        this.#open.delete(raw);
        resolve();
      })
    );
    this.#open.set(raw, closed);
  }

  /** Destroys every open socket; resolves once all have closed. */
  closeAll(): Promise<void> {
    const closed = [...this.#open.values()];
    for (const raw of this.#open.keys()) raw.destroy();
    return Promise.all(closed).then(() => {});
  }
}
