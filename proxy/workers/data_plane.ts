/**
 * A worker: runs every listener of the proxy (inbound, outbound and gateway), all bound with
 * SO_REUSEPORT so that every worker accepts on the same ports and the kernel spreads connections
 * over them. It keeps the latest {@link RuntimeSnapshot} the main thread posted, answers counter
 * requests, and replaces its listener set when told (a gateway's listeners follow its Gateways).
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
import {
  DEFAULT_LISTENER_LIMITS,
  type ListenerLimits,
  type SharedConnectionCounter,
} from "../http/conn_limits.ts";
import { type FromWorker, listenerKey, type ToWorker, type WorkerListener } from "./protocol.ts";

const scope = self as unknown as {
  postMessage(m: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
};

interface Running {
  key: string;
  port: number;
  listener: { close(): Promise<void> };
  stats: { snapshot(): Record<string, number> };
}

let snapshot: RuntimeSnapshot = EMPTY_SNAPSHOT;
let logger: ProxyLogger | undefined;
let connectionLimits: ListenerLimits = DEFAULT_LISTENER_LIMITS;
let workerIndex = 0;
let running: Running[] = [];
const requestMetrics = new IstioMetrics();
const tcpMetrics = new IstioTcpMetrics();
// Listener changes run one after another, so that two updates never bind the same port at once.
let changes: Promise<unknown> = Promise.resolve();

function counterOf(l: WorkerListener): SharedConnectionCounter | undefined {
  return l.connectionCounter && { buffer: l.connectionCounter, worker: workerIndex };
}

async function open(l: WorkerListener, log: ProxyLogger): Promise<Running> {
  if (l.direction === "outbound" || l.direction === "gateway") {
    const stats = new OutboundStats();
    const listener = new OutboundListener({
      address: l.address,
      port: l.port,
      reusePort: true,
      snapshot: () => snapshot,
      log: log.scope(l.direction === "gateway" ? "gateway" : "outbound"),
      observer: stats,
      requestMetrics,
      routeNames: l.routeNames,
      connectionLimits,
      connectionCounter: counterOf(l),
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
    snapshot: () => snapshot,
    log: log.scope("inbound"),
    observer: stats,
    requestMetrics,
    tcpMetrics,
    connectionLimits,
    connectionCounter: counterOf(l),
  });
  await listener.start();
  return { key: listenerKey(l), port: l.port, listener, stats };
}

/** Makes `wanted` the listener set: closes what is gone, binds what is new. The bind failures. */
async function apply(wanted: WorkerListener[]): Promise<string[]> {
  const keys = new Set(wanted.map(listenerKey));
  const gone = running.filter((r) => !keys.has(r.key));
  running = running.filter((r) => keys.has(r.key));
  await Promise.all(gone.map((r) => r.listener.close()));
  const errors: string[] = [];
  for (const l of wanted) {
    if (running.some((r) => r.key === listenerKey(l))) continue;
    try {
      running.push(await open(l, logger!));
    } catch (e) {
      errors.push(`${l.address}:${l.port}: ${(e as Error).message}`);
    }
  }
  return errors;
}

async function start(m: Extract<ToWorker, { type: "start" }>): Promise<void> {
  snapshot = m.snapshot;
  connectionLimits = m.connectionLimits;
  workerIndex = m.worker;
  logger = new ProxyLogger(m.levels, undefined, m.worker);
  const errors = await apply(m.listeners);
  if (errors.length === 0) {
    scope.postMessage({ type: "started" });
    return;
  }
  await apply([]);
  scope.postMessage({ type: "failed", error: errors.join("; ") });
}

scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const m = e.data;
  switch (m.type) {
    case "start":
      changes = changes.then(() => start(m));
      break;
    case "snapshot":
      snapshot = m.snapshot;
      scope.postMessage({ type: "applied", revision: m.snapshot.revision });
      break;
    case "listeners":
      changes = changes.then(async () => {
        const errors = await apply(m.listeners);
        scope.postMessage({ type: "listeners", id: m.id, errors });
      });
      break;
    case "levels":
      logger?.setLevels(m.levels);
      break;
    case "stats":
      scope.postMessage({
        type: "stats",
        id: m.id,
        listeners: running.map((l) => ({ port: l.port, counters: l.stats.snapshot() })),
        istio: requestMetrics.snapshot(),
        istioTcp: tcpMetrics.snapshot(),
      });
      break;
    case "close":
      changes = changes.then(() => apply([])).finally(() => scope.postMessage({ type: "closed" }));
      break;
  }
};
