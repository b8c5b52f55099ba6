/**
 * Keep-alive connections from the proxy to its application: a {@link ConnectionPool} that dials the
 * application in plain TCP with Deno's own sockets (`Deno.connect`, ../http/deno_conn_io.ts), which
 * cost less CPU per request than node:net (issue 17, item 2; figures in ../http/README.md).
 *
 * @module
 */
import { ConnectionPool } from "../http/connection_pool.ts";
import { DenoConnIo } from "../http/deno_conn_io.ts";

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
      dial: async () => {
        const signal = AbortSignal.timeout(timeoutMs);
        let conn: Deno.TcpConn;
        try {
          conn = await Deno.connect({ hostname: host, port, signal });
        } catch (e) {
          if (signal.aborted) throw new Error(`connect to ${host}:${port} timed out`);
          throw e;
        }
        // Nagle off: a request is written whole, and a late segment must not wait for an ACK.
        conn.setNoDelay(true);
        return new DenoConnIo(conn);
      },
    });
  }
}
