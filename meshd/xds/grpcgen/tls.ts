/**
 * The TLS contexts of proxyless gRPC (gRFC A29): certificates and roots come from the bootstrap's
 * certificate provider instance `default` (a file_watcher that `proxy --proxyless` keeps renewed),
 * never inline; the client checks the server's SPIFFE ID (match_subject_alt_names), as istiod's
 * pilot/pkg/networking/grpcgen/cds.go does for ISTIO_MUTUAL.
 *
 * @module
 */
import { ENVOY_TYPES, envoyAny } from "../../../shared/internal/xds/envoy_types.ts";

/** The certificate provider instance name in the bootstrap `proxy --proxyless` writes (Istio's). */
export const CERT_PROVIDER_INSTANCE = "default";

const TLS_SOCKET = "envoy.transport_sockets.tls";

function commonTlsContext(sans: readonly string[]): Record<string, unknown> {
  return {
    tlsCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: "default" },
    combinedValidationContext: {
      defaultValidationContext: {
        caCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: "ROOTCA" },
        ...(sans.length > 0 ? { matchSubjectAltNames: [...sans].sort().map((exact) => ({ exact })) } : {}),
      },
    },
  };
}

/**
 * A cluster's transport socket: mutual TLS with the workload certificate, accepting a server whose
 * certificate carries one of `sans` (SPIFFE IDs of the endpoints).
 */
export function upstreamTlsSocket(sans: readonly string[]): Record<string, unknown> {
  return {
    name: TLS_SOCKET,
    typedConfig: envoyAny(ENVOY_TYPES.upstreamTls, { commonTlsContext: commonTlsContext(sans) }),
  };
}

/**
 * An inbound filter chain's transport socket: mutual TLS that requires a client certificate from the
 * mesh root. Peer identities are checked per request by the RBAC filter (gRPC servers do not apply
 * match_subject_alt_names; istiod sends none there either).
 */
export function downstreamTlsSocket(): Record<string, unknown> {
  return {
    name: TLS_SOCKET,
    typedConfig: envoyAny(ENVOY_TYPES.downstreamTls, {
      commonTlsContext: commonTlsContext([]),
      requireClientCertificate: { value: true },
    }),
  };
}
