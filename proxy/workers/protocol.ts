/**
 * Messages between the main thread and the inbound workers (all structured-cloneable).
 *
 * @module
 */
import type { LogLevels } from "../logging/logger.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

/** One inbound listener a worker runs. */
export interface WorkerListener {
  /** Bind address and container port (every worker binds the same one, with SO_REUSEPORT). */
  address: string;
  port: number;
  /** The application endpoint (inbound only). */
  appAddress: string;
  appPort: number;
  /** Default inbound. An outbound listener (proxy/outbound) routes by the snapshot's services. */
  direction?: "inbound" | "outbound";
}

/** Main thread → worker. */
export type ToWorker =
  | {
    type: "start";
    worker: number;
    listeners: WorkerListener[];
    snapshot: RuntimeSnapshot;
    levels: LogLevels;
  }
  | { type: "snapshot"; snapshot: RuntimeSnapshot }
  | { type: "levels"; levels: LogLevels }
  | { type: "stats"; id: number }
  | { type: "close" };

/** The counters of one listener in one worker. */
export interface ListenerCounters {
  port: number;
  /** InboundStats.snapshot(): the counters and the `downstream_cx_active` gauge. */
  counters: Record<string, number>;
}

/** Worker → main thread. */
export type FromWorker =
  | { type: "started" }
  | { type: "failed"; error: string }
  | { type: "applied"; revision: number }
  | { type: "stats"; id: number; listeners: ListenerCounters[] }
  | { type: "closed" };
