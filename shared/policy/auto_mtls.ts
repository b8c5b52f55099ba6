/**
 * Automatic mutual TLS: whether a client proxy dials mutual TLS to one endpoint of a service port, or
 * plain text. Istio decides it on two levels, and both come down to the server's PeerAuthentication
 * mode at the endpoint's port:
 * - per endpoint, in EDS: `mtlsChecker.computeForEndpoint` (pilot/pkg/xds/endpoints/mtls_checker.go)
 *   marks an endpoint plain text when it has no sidecar (its `tlsMode` is not `istio`) or when
 *   `mtlsDisabledByPeerAuthentication` finds the workload's mode at its endpoint port
 *   (`GetMutualTLSModeForPort(ep.EndpointPort)`: mesh, namespace, workload and port level) DISABLE;
 * - per cluster: `conditionallyConvertToIstioMtls` / `buildUpstreamClusterTLSContext`
 *   (pilot/pkg/networking/core/cluster_tls.go) sets no TLS when the service's mode is `MTLSDisable`.
 * A DestinationRule's `trafficPolicy.tls` would override both; DestinationRule is not implemented
 * here, so the server's mode decides alone. One deliberate difference: Istio's cluster-level hint
 * (`BestEffortInferServiceMTLSMode`, pilot/pkg/model/push_context.go) reads mesh and namespace policies
 * only, so under a namespace DISABLE it sends plain text even to a workload whose own or port-level
 * policy is STRICT, which that server then resets; here the per-endpoint decision alone applies, and
 * such a workload gets mutual TLS.
 *
 * meshd computes {@link mtlsDisabledPorts} per endpoint; the proxy asks {@link dialsMtls}.
 *
 * @module
 */
import type { EffectiveMtlsMode } from "./peer_authentication.ts";

/**
 * The service ports (ascending) of an endpoint at which its workload accepts no mutual TLS: those
 * whose endpoint port's effective mode is DISABLE.
 *
 * @param ports Service port number to the endpoint port it reaches (a mesh.v1.Endpoint's `ports`).
 * @param modeAt The server's effective mode at an endpoint (container) port.
 */
export function mtlsDisabledPorts(
  ports: Readonly<Record<number, number>>,
  modeAt: (endpointPort: number) => EffectiveMtlsMode,
): number[] {
  return Object.entries(ports)
    .filter(([, endpointPort]) => modeAt(endpointPort) === "DISABLE")
    .map(([servicePort]) => Number(servicePort))
    .sort((a, b) => a - b);
}

/** What the client side knows of an endpoint (a mesh.v1.Endpoint as the proxy holds it). */
export interface AutoMtlsEndpoint {
  /** Whether a mesh proxy serves it (connected to meshd, or the tlsMode label). */
  readonly proxied: boolean;
  /** {@link mtlsDisabledPorts} of the endpoint; missing means none. */
  readonly mtlsDisabledPorts?: readonly number[];
}

/**
 * Whether to dial mutual TLS (with secure naming) to `endpoint` for the service port `servicePort`:
 * only to a proxied endpoint whose server does not disable mutual TLS at that port; plain text otherwise.
 */
export function dialsMtls(endpoint: AutoMtlsEndpoint, servicePort: number): boolean {
  return endpoint.proxied && !(endpoint.mtlsDisabledPorts ?? []).includes(servicePort);
}
