/**
 * The ALPN values that mark a TLS connection as the mesh's own mutual TLS, as Istio's sidecars use
 * them. A client sidecar offers Istio's value for the protocol it carries (Envoy's `istio.alpn` HTTP
 * filter `alpn_override`, and the cluster's `alpn_protocols` for TCP); the server sidecar's PERMISSIVE
 * listener matches `transport_protocol: tls` with `application_protocols` among these values to pick
 * its mutual TLS filter chain, and passes TLS without them to the application (raw TCP).
 *
 * Source: istio/istio `pilot/pkg/networking/core/listener.go` (`mtlsHTTPALPNs`,
 * `allIstioMtlsALPNs`, `mtlsTCPWithMxcALPNs`), `pilot/pkg/networking/util` (`ALPNInMeshH2`,
 * `ALPNInMeshWithMxc`) and `pilot/pkg/networking/core/listener_inbound.go`
 * (`inboundPermissiveTCPFilterChainMatchWithMxcOptions`: MTLS, plain TLS, plain text).
 *
 * Each client list keeps the real protocol after Istio's values (`http/1.1`, `h2`), so that a server
 * which selects by the real protocol (ours selects HTTP/2 by a negotiated `h2`) still does.
 *
 * @module
 */

/** Every ALPN value that selects mutual TLS on a PERMISSIVE inbound port (Istio's `allIstioMtlsALPNs`). */
export const ISTIO_MTLS_ALPNS: readonly string[] = Object.freeze([
  "istio",
  "istio-peer-exchange",
  "istio-http/1.0",
  "istio-http/1.1",
  "istio-h2",
]);

/** Offered by a mesh client carrying HTTP/1.1 (`istio.alpn`'s HTTP11 override, then `http/1.1`). */
export const MESH_HTTP1_ALPN: readonly string[] = Object.freeze(["istio-http/1.1", "istio", "http/1.1"]);

/** Offered by a mesh client carrying HTTP/2 or gRPC (`istio.alpn`'s HTTP2 override, then `h2`). */
export const MESH_H2_ALPN: readonly string[] = Object.freeze(["istio-h2", "istio", "h2"]);

/** Offered by a mesh client carrying TCP (opaque bytes, TLS passthrough included): `ALPNInMeshWithMxc`. */
export const MESH_TCP_ALPN: readonly string[] = Object.freeze(["istio-peer-exchange", "istio"]);

/**
 * Selected from by the inbound mutual TLS server of an HTTP2 or GRPC port: `h2`, `http/1.1` (Envoy's
 * inbound HTTP chains), then Istio's values. Deno's TLS (rustls) ends a handshake whose ALPN lists
 * share nothing (`no_application_protocol`) where Envoy's BoringSSL carries on without ALPN; with
 * Istio's values listed, a mesh TCP client (which offers no `h2` or `http/1.1`) still connects.
 */
export const INBOUND_H2_SERVER_ALPN: readonly string[] = Object.freeze([
  "h2",
  "http/1.1",
  ...ISTIO_MTLS_ALPNS,
]);

/** Whether a ClientHello's ALPN list (`alpn`, in the client's order) offers one of {@link ISTIO_MTLS_ALPNS}. */
export function offersMeshAlpn(alpn: readonly string[]): boolean {
  return alpn.some((p) => ISTIO_MTLS_ALPNS.includes(p));
}
