/**
 * An inbound worker: runs one {@link InboundListener} per inbound port, all bound with SO_REUSEPORT so
 * that every worker accepts on the same ports and the kernel spreads connections over them. It keeps
 * the latest {@link RuntimeSnapshot} the main thread posted and answers counter requests.
 *
 * The listeners bind with `reusePort: true`, which Deno 2.9.6's node:net honours (measured: two
 * workers bind one port and both accept; without it the second gets EADDRINUSE).
 *
 * @module
 */
import { InboundListener } from "../inbound/listener.ts";
import { InboundStats } from "../inbound/observer.ts";
import { OutboundListener, OutboundStats } from "../outbound/listener.ts";
import { ProxyLogger } from "../logging/logger.ts";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

const scope = self as unknown as {
  postMessage(m: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
};

let snapshot: RuntimeSnapshot = EMPTY_SNAPSHOT;
let logger: ProxyLogger | undefined;
const listeners: {
  port: number;
  listener: { close(): Promise<void> };
  stats: { snapshot(): Record<string, number> };
}[] = [];

async function start(m: Extract<ToWorker, { type: "start" }>): Promise<void> {
  snapshot = m.snapshot;
  logger = new ProxyLogger(m.levels, undefined, m.worker);
  const log = logger.scope("inbound");
  try {
    for (const l of m.listeners) {
      if (l.direction === "outbound") {
        const stats = new OutboundStats();
        const listener = new OutboundListener({
          address: l.address,
          port: l.port,
          reusePort: true,
          snapshot: () => snapshot,
          log: logger.scope("outbound"),
          observer: stats,
        });
        await listener.start();
        listeners.push({ port: l.port, listener, stats });
        continue;
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
        log,
        observer: stats,
      });
      await listener.start();
      listeners.push({ port: l.port, listener, stats });
    }
    scope.postMessage({ type: "started" });
  } catch (e) {
    await Promise.all(listeners.map((l) => l.listener.close()));
    listeners.length = 0;
    scope.postMessage({ type: "failed", error: (e as Error).message });
  }
}

scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const m = e.data;
  switch (m.type) {
    case "start":
      void start(m);
      break;
    case "snapshot":
      snapshot = m.snapshot;
      scope.postMessage({ type: "applied", revision: m.snapshot.revision });
      break;
    case "levels":
      logger?.setLevels(m.levels);
      break;
    case "stats":
      scope.postMessage({
        type: "stats",
        id: m.id,
        listeners: listeners.map((l) => ({ port: l.port, counters: l.stats.snapshot() })),
      });
      break;
    case "close":
      void Promise.all(listeners.map((l) => l.listener.close())).finally(() =>
        scope.postMessage({ type: "closed" })
      );
      break;
  }
};
