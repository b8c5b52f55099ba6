/**
 * The server listeners of a proxyless gRPC server (gRFC A36), named as istiod names them:
 * `xds.istio.io/grpc/lds/inbound/<ip>:<port>`, for 0.0.0.0, [::] and each of the workload's addresses
 * (grpc-js-xds asks for the address it binds and checks the listener's socket_address against it).
 * The filter chain follows the port's PeerAuthentication mode as istiod's grpcgen/lds.go maps it
 * ({@link grpcServerMode}): STRICT, and PERMISSIVE on a workload whose clients use mutual TLS, require
 * mutual TLS; DISABLE, and PERMISSIVE otherwise, are plain text. Authorization is the RBAC filters of
 * rbac.ts, then the router.
 *
 * @module
 */
import type { AuthorizationPolicySpec } from "../../../shared/mod.ts";
import type { PushContext, SelectingPolicyView, WorkloadView } from "../../push_context/push_context.ts";
import { ENVOY_TYPES, envoyAny } from "../../../shared/internal/xds/envoy_types.ts";
import { type EnvoyResource, grpcServerMode, ROUTER_FILTER } from "./outbound.ts";
import { rbacFilters } from "./rbac.ts";
import { downstreamTlsSocket } from "./tls.ts";

/** Istio's server listener name prefix (the bootstrap's server_listener_resource_name_template). */
export const INBOUND_PREFIX = "xds.istio.io/grpc/lds/inbound/";

/** The workload's ports that a service sends traffic to (endpoint ports). */
function inboundPorts(ctx: PushContext, w: WorkloadView): number[] {
  const ports = new Set<number>();
  for (const s of ctx.services) {
    for (const ep of s.endpoints) {
      if (ep.workload === w.key) { for (const p of Object.values(ep.ports)) ports.add(p); }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** The server listeners of a workload, with `policies` (those that select it) as RBAC filters. */
export function inboundListeners(
  ctx: PushContext,
  w: WorkloadView,
  policies: readonly SelectingPolicyView<AuthorizationPolicySpec>[],
): EnvoyResource[] {
  const filters = [...rbacFilters(policies), ROUTER_FILTER];
  const out: EnvoyResource[] = [];
  for (const port of inboundPorts(ctx, w)) {
    const mtls = grpcServerMode(w, port) === "STRICT";
    const suffix = mtls ? "mtls" : "plaintext";
    const chain = {
      name: `inbound-${suffix}`,
      filters: [{
        name: `inbound-hcm${suffix}`,
        typedConfig: envoyAny(ENVOY_TYPES.hcm, {
          statPrefix: "grpc",
          routeConfig: {
            name: `inbound|${suffix}`,
            virtualHosts: [{
              name: "inbound",
              domains: ["*"],
              routes: [{ match: { prefix: "/" }, nonForwardingAction: {} }],
            }],
          },
          httpFilters: filters,
        }),
      }],
      ...(mtls ? { transportSocket: downstreamTlsSocket() } : {}),
    };
    for (const ip of ["0.0.0.0", "::", ...w.addresses]) {
      const name = `${INBOUND_PREFIX}${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
      out.push({
        name,
        message: {
          name,
          address: { socketAddress: { address: ip, portValue: port } },
          filterChains: [chain],
          trafficDirection: "INBOUND",
        },
      });
    }
  }
  return out;
}
