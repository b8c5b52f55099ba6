/**
 * Messages between the main thread and the inbound workers (all structured-cloneable).
 *
 * @module
 */
import type { IstioSeries } from "../http/istio_metrics.ts";
import type { IstioTcpSeries } from "../tcp/tcp_metrics.ts";
import type { LogLevels } from "../../shared/internal/logging/levels.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { MeshTlsClient } from "../options/data_path_flags.ts";

/** One inbound listener a worker runs. */
export interface WorkerListener {
  /** Bind address and container port (every worker binds the same one, with SO_REUSEPORT). */
  address: string;
  port: number;
  /** The application endpoint (inbound only). */
  appAddress: string;
  appPort: number;
  /**
   * Default inbound. An outbound listener (proxy/outbound) routes by the snapshot's services; a
   * gateway listener is an outbound listener that routes by the route configurations `routeNames`.
   */
  direction?: "inbound" | "outbound" | "gateway";
  /**
   * Gateway listeners: the route configurations of the bind port, sorted: one `http.<port>`, or the
   * HTTPS ones (`https.<port>.<port name>.<gateway>.<namespace>`) chosen by SNI.
   */
  routeNames?: string[];
  /**
   * The listener's open-connection counter, one for all workers (set by the pool; a SharedArrayBuffer
   * is shared, not copied, by postMessage), so that `maxConnections` bounds the listener as a whole;
   * each worker also counts its own share in it (http/conn_limits.ts, `newConnectionCounter`).
   */
  connectionCounter?: SharedArrayBuffer;
}

/** The identity of a listener across updates: a listener whose key stays is kept, not rebound. */
export function listenerKey(l: WorkerListener): string {
  return `${l.direction ?? "inbound"}|${l.address}|${l.port}|${l.appAddress}|${l.appPort}|${
    (l.routeNames ?? []).join(",")
  }`;
}

/** Main thread -> worker. */
export type ToWorker =
  | {
    type: "start";
    worker: number;
    listeners: WorkerListener[];
    snapshot: RuntimeSnapshot;
    levels: LogLevels;
    /** Timeouts and connection limit of every listener (the proxy's flags). */
    connectionLimits: ListenerLimits;
    /** The TLS client of the HTTP/1.1 mesh leg (--meshTlsClient). */
    meshTlsClient: MeshTlsClient;
  }
  | { type: "snapshot"; snapshot: RuntimeSnapshot }
  /** The full listener set from now on: new ones are bound, missing ones closed (LDS). */
  | { type: "listeners"; id: number; listeners: WorkerListener[] }
  | { type: "levels"; levels: LogLevels }
  | { type: "stats"; id: number }
  | { type: "close" };

/** The counters of one listener in one worker. */
export interface ListenerCounters {
  port: number;
  /** InboundStats.snapshot(): the counters and the `downstream_cx_active` gauge. */
  counters: Record<string, number>;
}

/** Worker -> main thread. */
export type FromWorker =
  | { type: "started" }
  | { type: "failed"; error: string }
  | { type: "applied"; revision: number }
  /**
   * `istio`: the worker's Istio standard request series (proxy/http/istio_metrics.ts); `istioTcp`: its
   * TCP series (proxy/tcp/tcp_metrics.ts).
   */
  | {
    type: "stats";
    id: number;
    listeners: ListenerCounters[];
    istio: IstioSeries[];
    istioTcp: IstioTcpSeries[];
  }
  /** Listeners that could not be bound, as `<address>:<port>: <reason>`. */
  | { type: "listeners"; id: number; errors: string[] }
  | { type: "closed" };
