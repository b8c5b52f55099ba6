/**
 * Keep-alive connections from the proxy to its application: a {@link ConnectionPool} that dials the
 * application in plain TCP (node:net: `Deno.connect` measured no less CPU per
 * request and a higher peak RSS, ../http/README.md "Socket views").
 *
 * @module
 */
import net from "node:net";
import { ConnectionPool, pooledNodeSocket } from "../http/connection_pool.ts";

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
export class UpstreamPool extends ConnectionPool {
  constructor(options: UpstreamPoolOptions) {
    const { host, port } = options;
    const timeoutMs = options.connectTimeoutMs ?? 10_000;
    super({
      maxIdle: options.maxIdle,
      idleTimeoutMs: options.idleTimeoutMs,
      onConnect: options.onConnect,
      closedError: () => new Error("upstream pool closed"),
      dial: () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect({ host, port, allowHalfOpen: true });
          const timer = setTimeout(() => {
            socket.destroy();
            reject(new Error(`connect to ${host}:${port} timed out`));
          }, timeoutMs);
          const onError = (err: Error) => {
            clearTimeout(timer);
            socket.destroy();
            reject(err);
          };
          socket.once("error", onError);
          socket.once("connect", () => {
            clearTimeout(timer);
            socket.off("error", onError);
            resolve(socket);
          });
        }).then(pooledNodeSocket),
    });
  }
}
