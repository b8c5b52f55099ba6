/**
 * The worker pool: N Workers ({@link ./worker.ts}), each running every listener on the same ports
 * with SO_REUSEPORT. The main thread posts each {@link RuntimeSnapshot} to all of them and gathers
 * their counters for the admin `/stats`. A pool of one runs its data plane on the main isolate
 * (./inline_worker.ts) through the same messages, unless `isolate` asks for a Worker.
 *
 * Workers get network access only (no files, environment, subprocesses or FFI but libc's for capture);
 * the inline data plane has the process's permissions.
 *
 * @module
 */
import { LIBC_PATH } from "../capture/libc.ts";
import type { IstioSeries } from "../http/istio_metrics.ts";
import type { IstioTcpSeries } from "../tcp/tcp_metrics.ts";
import type { ScopedLog } from "../logging/logger.ts";
import type { LogLevels } from "../../shared/internal/logging/levels.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { DEFAULT_MESH_TLS_CLIENT, type MeshTlsClient } from "../options/data_path_flags.ts";
import type { PoolWorker } from "./inline_worker.ts";
import { listenerKey } from "./protocol.ts";
import type { FromWorker, ListenerCounters, ToWorker, WorkerListener } from "./protocol.ts";
import {
  DEFAULT_LISTENER_LIMITS,
  type ListenerLimits,
  newConnectionCounter,
  releaseWorker,
} from "../http/conn_limits.ts";

/** Settings of a {@link WorkerPool}. */
export interface WorkerPoolOptions {
  size: number;
  listeners: WorkerListener[];
  levels: LogLevels;
  log: ScopedLog;
  /** How long to wait for a worker to start its listeners. Default 10 s. */
  startTimeoutMs?: number;
  /** Timeouts and connection limit of every listener. Default {@link DEFAULT_LISTENER_LIMITS}. */
  connectionLimits?: ListenerLimits;
  /** The TLS client of the HTTP/1.1 mesh leg (--meshTlsClient). Default {@link DEFAULT_MESH_TLS_CLIENT}. */
  meshTlsClient?: MeshTlsClient;
  /**
   * Whether a pool of one runs its data plane in a Worker isolate too. Default false: on the main
   * isolate, which saves the isolate's memory (proxy/workers/README.md). Pools of two or more always
   * use Workers.
   */
  isolate?: boolean;
}

/** The counters of one worker. */
export interface WorkerCounters {
  worker: number;
  listeners: ListenerCounters[];
  /** The worker's Istio standard-metric series, to merge with mergeIstioSeries. */
  istio?: IstioSeries[];
  /** The worker's Istio TCP series, to merge with mergeIstioTcpSeries. */
  istioTcp?: IstioTcpSeries[];
}

interface Slot {
  index: number;
  worker: PoolWorker;
  /** The last snapshot revision the worker confirmed. */
  applied: number;
  waiters: Map<string, (m: FromWorker) => void>;
  alive: boolean;
}

/**
 * The Worker's module: `worker.ts` beside this file; when the proxy runs from its bundle
 * (`build/proxy/main.js`, `deno task bundle:proxy`), where `import.meta.url` is the bundle's, the
 * Worker's bundle `build/proxy/workers/worker.js`.
 */
const WORKER_MODULE = new URL(
  import.meta.url.endsWith(".js") ? "./workers/worker.js" : "./worker.ts",
  import.meta.url,
);

/** The pool. */
export class WorkerPool {
  readonly #o: WorkerPoolOptions;
  readonly #slots: Slot[] = [];
  /** One open-connection counter per listener, shared by its copies in every worker. */
  #counters = new Map<string, SharedArrayBuffer>();
  #nextId = 1;
  #started = false;
  #closed = false;

  constructor(options: WorkerPoolOptions) {
    this.#o = options;
  }

  /** Workers in the pool. */
  get size(): number {
    return this.#slots.length;
  }

  /** Whether the data plane runs on the main isolate (a pool of one, without `isolate`). */
  get inline(): boolean {
    return this.#o.size === 1 && !this.#o.isolate;
  }

  /** Whether every worker has started its listeners. */
  get started(): boolean {
    return this.#started && !this.#closed;
  }

  /** The snapshot revision each worker confirmed, by worker number. */
  appliedRevisions(): number[] {
    return this.#slots.map((s) => s.applied);
  }

  /**
   * Starts the workers, each with `snapshot`, and waits until all have bound their listeners.
   *
   * @throws Error when a worker fails to start (for example the port is taken); the pool is closed
   */
  async start(snapshot: RuntimeSnapshot): Promise<void> {
    // A worker cannot be given more than the proxy has.
    const ffiGranted = Deno.permissions.querySync({ name: "ffi", path: LIBC_PATH }).state === "granted";
    // Imported only when used: with Workers the main isolate never loads the data path's modules.
    const inline = this.inline ? (await import("./inline_worker.ts")).InlineWorker : undefined;
    for (let index = 0; index < this.#o.size; index++) {
      const worker: PoolWorker = inline ? new inline() : new Worker(WORKER_MODULE, {
        type: "module",
        name: `proxy-worker-${index}`,
        deno: {
          permissions: {
            net: true,
            read: false,
            write: false,
            env: false,
            run: false,
            // Transparent capture reads SO_ORIGINAL_DST through libc (../capture), when the proxy may.
            ffi: ffiGranted ? [LIBC_PATH] : false,
            sys: false,
            import: false,
          },
        },
      });
      const slot: Slot = { index, worker, applied: 0, waiters: new Map(), alive: true };
      worker.onmessage = (e: MessageEvent<FromWorker>) => this.#onMessage(slot, e.data);
      worker.onerror = (e: ErrorEvent) => {
        e.preventDefault();
        slot.alive = false;
        this.#o.log.error("worker failed", { worker: index, error: e.message });
        // Its connections closed with it: their slots go back to the listeners' limits.
        for (const counter of this.#counters.values()) releaseWorker(counter, index);
        for (const w of slot.waiters.values()) w({ type: "failed", error: e.message });
        slot.waiters.clear();
      };
      this.#slots.push(slot);
    }
    const timeout = this.#o.startTimeoutMs ?? 10_000;
    const results = await Promise.all(this.#slots.map((slot) => {
      const reply = this.#await(slot, ["started", "failed"], timeout);
      this.#post(slot, {
        type: "start",
        worker: slot.index,
        listeners: this.#withCounters(this.#o.listeners),
        snapshot,
        levels: this.#o.levels,
        connectionLimits: this.#o.connectionLimits ?? DEFAULT_LISTENER_LIMITS,
        meshTlsClient: this.#o.meshTlsClient ?? DEFAULT_MESH_TLS_CLIENT,
      });
      return reply;
    }));
    const failed = results.find((r) => r.type !== "started");
    if (failed) {
      await this.close();
      throw new Error(failed.type === "failed" ? failed.error : "worker did not start");
    }
    for (const slot of this.#slots) slot.applied = snapshot.revision;
    this.#started = true;
  }

  /** Posts a snapshot to every worker. */
  publish(snapshot: RuntimeSnapshot): void {
    for (const slot of this.#slots) this.#post(slot, { type: "snapshot", snapshot });
  }

  /**
   * Makes `listeners` every worker's listener set (new ones bound, missing ones closed), as an LDS
   * update; a listener that fails to bind does not stop the others.
   *
   * @returns the bind failures, one per listener and worker (`worker <n>: <address>:<port>: <reason>`)
   */
  async setListeners(wanted: WorkerListener[], timeoutMs = 10_000): Promise<string[]> {
    const listeners = this.#withCounters(wanted);
    const replies = await Promise.all(this.#slots.map(async (slot) => {
      const id = this.#nextId++;
      const reply = this.#await(slot, ["listeners"], timeoutMs, id);
      this.#post(slot, { type: "listeners", id, listeners });
      const m = await reply;
      if (m.type === "listeners") return m.errors.map((e) => `worker ${slot.index}: ${e}`);
      return [m.type === "failed" ? m.error : `worker ${slot.index}: no answer`];
    }));
    return replies.flat();
  }

  /** Posts log levels to every worker. */
  setLevels(levels: LogLevels): void {
    for (const slot of this.#slots) this.#post(slot, { type: "levels", levels });
  }

  /** The counters of every worker that answers within `timeoutMs`. */
  async counters(timeoutMs = 1000): Promise<WorkerCounters[]> {
    const replies = await Promise.all(this.#slots.map(async (slot): Promise<WorkerCounters | undefined> => {
      const id = this.#nextId++;
      const reply = this.#await(slot, ["stats"], timeoutMs, id);
      this.#post(slot, { type: "stats", id });
      const m = await reply;
      return m.type === "stats"
        ? { worker: slot.index, listeners: m.listeners, istio: m.istio, istioTcp: m.istioTcp }
        : undefined;
    }));
    return replies.filter((r): r is WorkerCounters => r !== undefined);
  }

  /** Closes every listener and ends the workers. Idempotent. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#slots.map(async (slot) => {
      const reply = this.#await(slot, ["closed"], timeoutMs);
      this.#post(slot, { type: "close" });
      await reply;
      slot.worker.terminate();
      slot.alive = false;
    }));
  }

  /** The listeners with their shared connection counters (kept for listeners that stay). */
  #withCounters(listeners: WorkerListener[]): WorkerListener[] {
    const counters = new Map<string, SharedArrayBuffer>();
    const out = listeners.map((l) => {
      const key = listenerKey(l);
      const counter = this.#counters.get(key) ?? counters.get(key) ?? newConnectionCounter(this.#o.size);
      counters.set(key, counter);
      return { ...l, connectionCounter: counter };
    });
    this.#counters = counters;
    return out;
  }

  #post(slot: Slot, m: ToWorker): void {
    if (slot.alive) slot.worker.postMessage(m);
  }

  #onMessage(slot: Slot, m: FromWorker): void {
    if (m.type === "applied") {
      slot.applied = Math.max(slot.applied, m.revision);
      return;
    }
    const key = m.type === "stats" || m.type === "listeners"
      ? `${m.type}:${m.id}`
      : m.type === "failed"
      ? "started"
      : m.type;
    const waiter = slot.waiters.get(key);
    if (waiter) {
      slot.waiters.delete(key);
      waiter(m);
    }
  }

  /** A promise of the worker's next message of one of `types` (or a `failed` after a timeout). */
  #await(slot: Slot, types: FromWorker["type"][], timeoutMs: number, id?: number): Promise<FromWorker> {
    const key = types[0] === "stats" || types[0] === "listeners" ? `${types[0]}:${id}` : types[0];
    return new Promise((resolve) => {
      if (!slot.alive) return resolve({ type: "failed", error: "worker is not running" });
      const timer = setTimeout(() => {
        slot.waiters.delete(key);
        resolve({ type: "failed", error: `worker ${slot.index}: no ${types[0]} within ${timeoutMs} ms` });
      }, timeoutMs);
      slot.waiters.set(key, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }
}
