/**
 * Envoy's v3 xDS types for proxyless gRPC (npm:@grpc/grpc-js-xds, grpc-go, grpc-java), beside the
 * mesh's own types that meshd's proxies read. A node is proxyless when its metadata carries
 * `GENERATOR: grpc` (what Istio's proxyless bootstrap sends); it then receives Listeners (client
 * api_listeners and its own server listeners), RouteConfigurations, Clusters and
 * ClusterLoadAssignments, built as istiod's pilot/pkg/networking/grpcgen builds them. The ADS server
 * filters what a node subscribed to by name (grpc-js-xds asks by name, state of the world).
 *
 * @module
 */
import type { AuthorizationPolicySpec } from "../../../shared/mod.ts";
import type { PushContext, SelectingPolicyView, WorkloadView } from "../../push_context/push_context.ts";
import { encodeEnvoy, ENVOY_TYPES, envoyTypeUrl } from "../../../shared/internal/xds/envoy_types.ts";
import type { ProxyNode } from "../ads_types.ts";
import {
  type EnvoyResource,
  outboundClusters,
  outboundEndpoints,
  outboundListeners,
  outboundRoutes,
} from "./outbound.ts";
import { inboundListeners } from "./inbound.ts";

/** Type URLs served to proxyless nodes. */
export const GRPC_TYPE_URLS: { listener: string; route: string; cluster: string; endpoint: string } = {
  listener: envoyTypeUrl(ENVOY_TYPES.listener),
  route: envoyTypeUrl(ENVOY_TYPES.route),
  cluster: envoyTypeUrl(ENVOY_TYPES.cluster),
  endpoint: envoyTypeUrl(ENVOY_TYPES.endpoint),
};

/** Whether a node is a proxyless gRPC client or server (node metadata `GENERATOR: grpc`). */
export function isProxyless(node: ProxyNode): boolean {
  return node.metadata.GENERATOR === "grpc";
}

/** An Envoy resource encoded: its name and bytes. */
export interface EncodedResource {
  name: string;
  body: Uint8Array;
}

/**
 * The resources of `typeUrl` for a proxyless node, or undefined for a type not served to it.
 *
 * @param workload the node's workload (for its server listeners), if meshd knows it
 * @param policies the AuthorizationPolicies that select that workload
 * @throws Error when a message does not encode (a bug: the shapes are built here)
 */
export function grpcResources(
  ctx: PushContext,
  typeUrl: string,
  workload: WorkloadView | undefined,
  policies: readonly SelectingPolicyView<AuthorizationPolicySpec>[],
): EncodedResource[] | undefined {
  const encode = (type: string, list: EnvoyResource[]): EncodedResource[] =>
    list.map((r) => ({ name: r.name, body: encodeEnvoy(type, r.message) }));
  switch (typeUrl) {
    case GRPC_TYPE_URLS.listener:
      return encode(ENVOY_TYPES.listener, [
        ...outboundListeners(ctx),
        ...(workload ? inboundListeners(ctx, workload, policies) : []),
      ]);
    case GRPC_TYPE_URLS.route:
      return encode(ENVOY_TYPES.route, outboundRoutes(ctx));
    case GRPC_TYPE_URLS.cluster:
      return encode(ENVOY_TYPES.cluster, outboundClusters(ctx));
    case GRPC_TYPE_URLS.endpoint:
      return encode(ENVOY_TYPES.endpoint, outboundEndpoints(ctx));
    default:
      return undefined;
  }
}
