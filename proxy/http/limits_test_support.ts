/**
 * Test support for the listener limits (conn_limits_test.ts, request_timeout_test.ts): an inbound
 * (plain text, PERMISSIVE) or outbound (redirected form, a plain-text service) listener with given
 * limits in front of a real Deno application ({@link TestApp}), and timing helpers.
 *
 * @module
 */
import { InboundListener } from "../inbound/listener.ts";
import type { InboundStats } from "../inbound/observer.ts";
import { RawConn, RecordingLog, snapshotOf, TestApp } from "../inbound/test_support.ts";
import { OutboundListener } from "../outbound/listener.ts";
import type { OutboundStats } from "../outbound/outbound_stats.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { ListenerLimits, SharedConnectionCounter } from "./conn_limits.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

/** A listener of one kind in front of a TestApp, with these limits. */
export interface Proxied {
  port: number;
  counters: Record<string, number>;
  /** The Host header the listener routes by. */
  host: string;
  close(): Promise<void>;
}

/** `foo/app` (app.foo.svc.cluster.local:80), one plain-text endpoint on 127.0.0.1:`appPort`. */
export function appService(appPort: number): RuntimeSnapshot["services"] {
  const endpoint = endpointInfo({ workload: "app-1", ports: { "80": appPort } });
  return {
    "foo/app": serviceInfo({
      name: "app",
      ports: [{ number: 80, targetPort: appPort }],
      endpoints: [endpoint],
    }),
  };
}

function outboundSnapshot(appPort: number): RuntimeSnapshot {
  return { ...snapshotOf("PERMISSIVE", undefined), services: appService(appPort) };
}

/** An inbound listener (not started) in front of `app`. */
export function inboundListener(
  app: TestApp,
  limits: Partial<ListenerLimits>,
  bind: { port: number; reusePort?: boolean; connectionCounter?: SharedConnectionCounter } = { port: 0 },
): InboundListener {
  const snapshot = snapshotOf("PERMISSIVE", undefined);
  return new InboundListener({
    address: "127.0.0.1",
    ...bind,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => snapshot,
    log: new RecordingLog(),
    connectionLimits: limits,
  });
}

const KINDS = {
  async inbound(limits: Partial<ListenerLimits>, app: TestApp): Promise<Proxied> {
    const l = inboundListener(app, limits);
    await l.start();
    const counters = (l.observer as InboundStats).counters;
    return { port: l.port, counters, host: "app", close: () => l.close() };
  },
  async outbound(limits: Partial<ListenerLimits>, app: TestApp): Promise<Proxied> {
    const snapshot = outboundSnapshot(app.port);
    const l = new OutboundListener({
      address: "127.0.0.1",
      port: 0,
      snapshot: () => snapshot,
      log: new RecordingLog(),
      connectionLimits: limits,
    });
    await l.start();
    const counters = (l.observer as OutboundStats).counters;
    return { port: l.port, counters, host: "app.foo.svc.cluster.local", close: () => l.close() };
  },
};

/** The listener kinds {@link withListener} starts. */
export type ListenerKind = keyof typeof KINDS;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` with a listener of `kind` and these limits in front of a new TestApp, then stops both. */
export async function withListener(
  kind: ListenerKind,
  limits: Partial<ListenerLimits>,
  fn: (p: Proxied, app: TestApp) => Promise<void>,
): Promise<void> {
  const app = new TestApp();
  const p = await KINDS[kind](limits, app);
  try {
    await fn(p, app);
  } finally {
    await p.close();
    app.gate.resolve();
    await app.stop();
  }
}

/** Waits until the peer closes; the ms it took from `since`, or -1 when it did not within `maxMs`. */
export async function closedAfter(c: RawConn, since: number, maxMs: number): Promise<number> {
  const ok = await c.closed(maxMs - (Date.now() - since));
  return ok ? Date.now() - since : -1;
}

/** The sweep runs every quarter of the shortest timeout; scheduling on a busy machine adds some. */
export const MARGIN_MS = 1000;
