/**
 * What a proxyless gRPC client reads to call a service (gRFC A27), named as istiod's
 * pilot/pkg/networking/grpcgen names them: a Listener `<host>:<port>` with an api_listener
 * (HttpConnectionManager, RDS over ADS, the router filter), a RouteConfiguration `<host>:<port>` with
 * one virtual host for the host and host:port, a Cluster `outbound|<port>||<host>` of type EDS (mutual
 * TLS when every endpoint is a mesh workload whose proxyless server mode, {@link grpcServerMode}, is
 * STRICT), and its ClusterLoadAssignment with each endpoint's locality and weight.
 *
 * @module
 */
import type {
  PushContext,
  ServicePortView,
  ServiceView,
  WorkloadView,
} from "../../push_context/push_context.ts";
import { ENVOY_TYPES, envoyAny } from "../../../shared/internal/xds/envoy_types.ts";
import { upstreamTlsSocket } from "./tls.ts";

/** One Envoy resource before encoding: its name and the message as a plain object. */
export interface EnvoyResource {
  name: string;
  message: Record<string, unknown>;
}

/** Istio's cluster name of a service port: `outbound|<port>||<host>`. */
export function clusterName(host: string, port: number): string {
  return `outbound|${port}||${host}`;
}

/** The router filter, last in every HttpConnectionManager (grpc-js-xds refuses anything else last). */
export const ROUTER_FILTER: Record<string, unknown> = {
  name: "envoy.filters.http.router",
  typedConfig: envoyAny(ENVOY_TYPES.router, {}),
};

const ADS = { ads: {}, resourceApiVersion: "V3" };

/** Every (host, port) of the context's services, in service order. */
function hostPorts(ctx: PushContext): { service: ServiceView; host: string; port: ServicePortView }[] {
  return ctx.services.flatMap((service) =>
    service.hosts.filter((h) => !h.includes("*")).flatMap((host) =>
      service.ports.map((port) => ({ service, host, port }))
    )
  );
}

/** LDS: one api_listener per service host and port. */
export function outboundListeners(ctx: PushContext): EnvoyResource[] {
  return hostPorts(ctx).map(({ host, port }) => {
    const name = `${host}:${port.number}`;
    return {
      name,
      message: {
        name,
        apiListener: {
          apiListener: envoyAny(ENVOY_TYPES.hcm, {
            statPrefix: name,
            rds: { configSource: ADS, routeConfigName: name },
            httpFilters: [ROUTER_FILTER],
          }),
        },
      },
    };
  });
}

/** RDS: one route configuration per service host and port, everything to its cluster. */
export function outboundRoutes(ctx: PushContext): EnvoyResource[] {
  return hostPorts(ctx).map(({ host, port }) => {
    const name = `${host}:${port.number}`;
    return {
      name,
      message: {
        name,
        virtualHosts: [{
          name,
          domains: [host, name],
          routes: [{ match: { prefix: "" }, route: { cluster: clusterName(host, port.number) } }],
        }],
      },
    };
  });
}

/** The effective inbound mode of a workload's port (its own, else the workload's default). */
function modeOf(w: WorkloadView, port: number): string {
  return (w.inboundMtls.find((m) => m.port === port) ?? w.defaultMtls).mode;
}

/**
 * What a proxyless gRPC server on `port` of `w` accepts: `STRICT` (mutual TLS only) or `DISABLE`
 * (plain text only); gRPC's filter chain match cannot tell TLS from plain text (gRFC A36), so there is
 * no PERMISSIVE. As istiod's pilot/pkg/networking/grpcgen/lds.go `buildInboundFilterChains`: PERMISSIVE
 * becomes STRICT when the workload's clients use mutual TLS ("auto-mtls label is set": Istio checks
 * `security.istio.io/tlsMode: istio`; the mesh's automatic mTLS keys on `proxied`, which is that label
 * or `security.mesh.io/tlsMode: mesh` or a connected proxy), and DISABLE otherwise.
 */
export function grpcServerMode(w: WorkloadView, port: number): "STRICT" | "DISABLE" {
  const mode = modeOf(w, port);
  return mode === "STRICT" || (mode === "PERMISSIVE" && w.proxied) ? "STRICT" : "DISABLE";
}

/** The SPIFFE IDs to require of a service port's endpoints, or undefined when it is not all mutual TLS. */
function mtlsIdentities(ctx: PushContext, service: ServiceView, port: ServicePortView): string[] | undefined {
  const ids = new Set<string>();
  for (const ep of service.endpoints) {
    if (ep.address === "" || ep.ports[port.number] === undefined) continue;
    const w = ctx.workloads.get(ep.workload);
    if (!ep.proxied || ep.identity === "" || !w || grpcServerMode(w, ep.ports[port.number]) !== "STRICT") {
      return undefined;
    }
    ids.add(ep.identity);
  }
  return ids.size > 0 ? [...ids] : undefined;
}

/** CDS: one EDS cluster per service host and port. */
export function outboundClusters(ctx: PushContext): EnvoyResource[] {
  return hostPorts(ctx).map(({ service, host, port }) => {
    const name = clusterName(host, port.number);
    const sans = mtlsIdentities(ctx, service, port);
    return {
      name,
      message: {
        name,
        type: "EDS",
        edsClusterConfig: { edsConfig: ADS, serviceName: name },
        lbPolicy: "ROUND_ROBIN",
        ...(sans ? { transportSocket: upstreamTlsSocket(sans) } : {}),
      },
    };
  });
}

/** `region/zone/subzone` as an Envoy Locality. */
function locality(text: string): Record<string, string> {
  const [region = "", zone = "", subZone = ""] = text.split("/");
  return { region, zone, subZone };
}

/** EDS: the endpoints of each service host and port, grouped by locality, with their weights. */
export function outboundEndpoints(ctx: PushContext): EnvoyResource[] {
  return hostPorts(ctx).map(({ service, host, port }) => {
    const name = clusterName(host, port.number);
    const byLocality = new Map<string, { weight: number; lbEndpoints: Record<string, unknown>[] }>();
    for (const ep of service.endpoints) {
      const target = ep.ports[port.number];
      // Endpoints behind another network's gateway have no address a gRPC client could dial.
      if (ep.address === "" || target === undefined) continue;
      const w = ctx.workloads.get(ep.workload);
      const weight = w && w.weight > 0 ? w.weight : 1;
      const key = w?.locality ?? "";
      const group = byLocality.get(key) ?? { weight: 0, lbEndpoints: [] };
      group.weight += weight;
      group.lbEndpoints.push({
        endpoint: { address: { socketAddress: { address: ep.address, portValue: target } } },
        healthStatus: "HEALTHY",
        loadBalancingWeight: { value: weight },
      });
      byLocality.set(key, group);
    }
    return {
      name,
      message: {
        clusterName: name,
        endpoints: [...byLocality].map(([key, g]) => ({
          locality: locality(key),
          lbEndpoints: g.lbEndpoints,
          loadBalancingWeight: { value: g.weight },
        })),
      },
    };
  });
}
