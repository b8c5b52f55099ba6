/**
 * The data plane of one worker: every listener of the proxy (inbound, outbound and gateway), all
 * bound with SO_REUSEPORT so that every worker accepts on the same ports and the kernel spreads
 * connections over them. It keeps the latest {@link RuntimeSnapshot} the main thread posted, answers
 * counter requests, and replaces its listener set when told (a gateway's listeners follow its
 * Gateways). It speaks the {@link ToWorker} / {@link FromWorker} protocol through a `post` function,
 * so that the same logic runs in a Worker isolate (./worker.ts) or, at `--concurrency 1`, on the main
 * isolate (./inline_worker.ts).
 *
 * The listeners bind with `reusePort: true`, which Deno 2.9.6's node:net honours (measured: two
 * workers bind one port and both accept; without it the second gets EADDRINUSE).
 *
 * @module
 */
import { InboundListener } from "../inbound/listener.ts";
import { InboundStats } from "../inbound/observer.ts";
import { IstioMetrics } from "../http/istio_metrics.ts";
import { IstioTcpMetrics } from "../tcp/tcp_metrics.ts";
import { OutboundListener } from "../outbound/listener.ts";
import { OutboundStats } from "../outbound/outbound_stats.ts";
import { ProxyLogger } from "../logging/logger.ts";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import { DEFAULT_MESH_TLS_CLIENT, type MeshTlsClient } from "../options/data_path_flags.ts";
import {
  DEFAULT_LISTENER_LIMITS,
  type ListenerLimits,
  type SharedConnectionCounter,
} from "../http/conn_limits.ts";
import { type FromWorker, listenerKey, type ToWorker, type WorkerListener } from "./protocol.ts";

interface Running {
  key: string;
  port: number;
  listener: { close(): Promise<void> };
  stats: { snapshot(): Record<string, number> };
}

/** One worker's listeners, snapshot and counters, driven by {@link ToWorker} messages. */
export class DataPlane {
  readonly #post: (m: FromWorker) => void;
  #snapshot: RuntimeSnapshot = EMPTY_SNAPSHOT;
  #logger: ProxyLogger | undefined;
  #connectionLimits: ListenerLimits = DEFAULT_LISTENER_LIMITS;
  #meshTlsClient: MeshTlsClient = DEFAULT_MESH_TLS_CLIENT;
  #workerIndex = 0;
  #running: Running[] = [];
  readonly #requestMetrics = new IstioMetrics();
  readonly #tcpMetrics = new IstioTcpMetrics();
  // Listener changes run one after another, so that two updates never bind the same port at once.
  #changes: Promise<unknown> = Promise.resolve();
  readonly #current = (): RuntimeSnapshot => this.#snapshot;

  /** @param post where the answers go (the Worker's `postMessage`, or the inline stand-in's) */
  constructor(post: (m: FromWorker) => void) {
    this.#post = post;
  }

  /** Handles one message of the main thread. */
  handle(m: ToWorker): void {
    switch (m.type) {
      case "start":
        this.#changes = this.#changes.then(() => this.#start(m));
        break;
      case "snapshot":
        this.#snapshot = m.snapshot;
        this.#post({ type: "applied", revision: m.snapshot.revision });
        break;
      case "listeners":
        this.#changes = this.#changes.then(async () => {
          const errors = await this.#apply(m.listeners);
          this.#post({ type: "listeners", id: m.id, errors });
        });
        break;
      case "levels":
        this.#logger?.setLevels(m.levels);
        break;
      case "stats":
        this.#post({
          type: "stats",
          id: m.id,
          listeners: this.#running.map((l) => ({ port: l.port, counters: l.stats.snapshot() })),
          istio: this.#requestMetrics.snapshot(),
          istioTcp: this.#tcpMetrics.snapshot(),
        });
        break;
      case "close":
        this.#changes = this.#changes.then(() => this.#apply([])).finally(() =>
          this.#post({ type: "closed" })
        );
        break;
    }
  }

  #counterOf(l: WorkerListener): SharedConnectionCounter | undefined {
    return l.connectionCounter && { buffer: l.connectionCounter, worker: this.#workerIndex };
  }

  async #open(l: WorkerListener, log: ProxyLogger): Promise<Running> {
    if (l.direction === "outbound" || l.direction === "gateway") {
      const stats = new OutboundStats();
      const listener = new OutboundListener({
        address: l.address,
        port: l.port,
        reusePort: true,
        snapshot: this.#current,
        log: log.scope(l.direction === "gateway" ? "gateway" : "outbound"),
        observer: stats,
        requestMetrics: this.#requestMetrics,
        routeNames: l.routeNames,
        connectionLimits: this.#connectionLimits,
        connectionCounter: this.#counterOf(l),
        upstream: { meshTls: this.#meshTlsClient },
      });
      await listener.start();
      return { key: listenerKey(l), port: l.port, listener, stats };
    }
    const stats = new InboundStats();
    const listener = new InboundListener({
      address: l.address,
      port: l.port,
      reusePort: true,
      appAddress: l.appAddress,
      appPort: l.appPort,
      mtlsPort: l.port,
      snapshot: this.#current,
      log: log.scope("inbound"),
      observer: stats,
      requestMetrics: this.#requestMetrics,
      tcpMetrics: this.#tcpMetrics,
      connectionLimits: this.#connectionLimits,
      connectionCounter: this.#counterOf(l),
    });
    await listener.start();
    return { key: listenerKey(l), port: l.port, listener, stats };
  }

  /** Makes `wanted` the listener set: closes what is gone, binds what is new. The bind failures. */
  async #apply(wanted: WorkerListener[]): Promise<string[]> {
    const keys = new Set(wanted.map(listenerKey));
    const gone = this.#running.filter((r) => !keys.has(r.key));
    this.#running = this.#running.filter((r) => keys.has(r.key));
    await Promise.all(gone.map((r) => r.listener.close()));
    const errors: string[] = [];
    for (const l of wanted) {
      if (this.#running.some((r) => r.key === listenerKey(l))) continue;
      try {
        this.#running.push(await this.#open(l, this.#logger!));
      } catch (e) {
        errors.push(`${l.address}:${l.port}: ${(e as Error).message}`);
      }
    }
    return errors;
  }

  async #start(m: Extract<ToWorker, { type: "start" }>): Promise<void> {
    this.#snapshot = m.snapshot;
    this.#connectionLimits = m.connectionLimits;
    this.#meshTlsClient = m.meshTlsClient;
    this.#workerIndex = m.worker;
    this.#logger = new ProxyLogger(m.levels, undefined, m.worker);
    const errors = await this.#apply(m.listeners);
    if (errors.length === 0) {
      this.#post({ type: "started" });
      return;
    }
    await this.#apply([]);
    this.#post({ type: "failed", error: errors.join("; ") });
  }
}
