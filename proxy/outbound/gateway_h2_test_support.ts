/**
 * The gateway of the HTTP/2 gRPC gateway tests: a snapshot with one route configuration `http.8080`
 * (port 80, bound on 8080, Gateway foo/gw) that sends every request for one host to
 * `app.foo.svc.cluster.local:80`, a `GRPC` port in front of the application.
 *
 * @module
 */
import type { GatewayRoute, RouteConfiguration } from "../../shared/routing/mod.ts";
import { snapshotOf } from "../inbound/test_support.ts";
import { appService } from "../http/limits_test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

/** The route configuration's name, for `routeNames`. */
export const GATEWAY_ROUTE_NAME = "http.8080";

/** The snapshot; `route` adds to the one route (a `timeoutMs`...). */
export function grpcGatewaySnapshot(
  host: string,
  appPort: number,
  route: Partial<GatewayRoute> = {},
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
        ...route,
      }],
    }],
  };
  const base = snapshotOf("PERMISSIVE", undefined);
  const app = appService(appPort)["foo/app"];
  return {
    ...base,
    workload: base.workload && { ...base.workload, namespace: "foo" },
    services: { "foo/app": { ...app, ports: app.ports.map((p) => ({ ...p, protocol: "GRPC" })) } },
    routes: { [rc.name]: rc },
  };
}
