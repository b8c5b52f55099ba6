/**
 * A gateway's runtime snapshot for the tests of one route: a plain-text `http.8080` server whose
 * one virtual host `host` sends everything to the service `app.foo` (port 80, protocol `protocol`)
 * at 127.0.0.1:`appPort`, with an optional route timeout, and a started listener serving it. Not used
 * by the proxy itself.
 *
 * @module
 */
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { snapshotOf } from "../inbound/test_support.ts";
import { appService } from "../http/limits_test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";
import { RecordingLog } from "../inbound/test_support.ts";
import { OutboundListener } from "./listener.ts";

/** The route configuration's name, for a listener's `routeNames`. */
export const GATEWAY_ROUTE_NAME = "http.8080";

/** The snapshot of a gateway with one route from `host` to `app.foo` (see the module documentation). */
export function oneRouteGateway(
  host: string,
  appPort: number,
  protocol: string,
  timeoutMs?: number,
): RuntimeSnapshot {
  const rc: RouteConfiguration = {
    name: GATEWAY_ROUTE_NAME,
    port: 80,
    bindPort: 8080,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: `${host}:80`,
      domains: [host],
      routes: [{
        name: "foo/app.0",
        matches: [],
        destinations: [{ host: "app.foo.svc.cluster.local", port: 80, weight: 100 }],
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      }],
    }],
  };
  const base = snapshotOf("PERMISSIVE", undefined);
  const app = appService(appPort)["foo/app"];
  return {
    ...base,
    workload: base.workload && { ...base.workload, namespace: "foo" },
    services: { "foo/app": { ...app, ports: app.ports.map((p) => ({ ...p, protocol })) } },
    routes: { [rc.name]: rc },
  };
}

/** A started gateway listener serving {@link oneRouteGateway}'s `http.8080`, and its counters. */
export async function startOneRouteGateway(
  snapshot: RuntimeSnapshot,
  connectionLimits: Partial<ListenerLimits> = {},
): Promise<{ gw: OutboundListener; stats: () => Record<string, number> }> {
  const gw = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => snapshot,
    log: new RecordingLog(),
    routeNames: [GATEWAY_ROUTE_NAME],
    connectionLimits,
  });
  await gw.start();
  return { gw, stats: () => (gw.observer as unknown as { counters: Record<string, number> }).counters };
}
