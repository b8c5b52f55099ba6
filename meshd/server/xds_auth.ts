/**
 * XDS_AUTH on the mutual-TLS ADS listener: a proxy may act only as a workload of the namespace its
 * certificate names (Istio's DISCO_ENABLE_XDS_IDENTITY_CHECK: "clients may act only as namespaces
 * they are permitted"). The plain-text listener stays unauthenticated, as Istio's 15010 without
 * XDS_AUTH_PLAINTEXT.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { tryParseSpiffeId } from "../../shared/mod.ts";
import type { ProxyNode } from "../xds/ads_server.ts";
import { workloadKeyOf } from "../xds/generators.ts";

/** Options of {@link xdsAuthorizer}. */
export interface XdsAuthOptions {
  /** XDS_AUTH. */
  enabled: boolean;
  /** The mesh trust domain; certificates of other trust domains are refused. */
  trustDomain: string;
}

/**
 * The authorize hook for the ADS server.
 *
 * @returns undefined to accept, or the reason to refuse
 */
export function xdsAuthorizer(
  options: XdsAuthOptions,
): (call: grpc.ServerDuplexStream<unknown, unknown>, node: ProxyNode) => string | undefined {
  return (call, node) => {
    if (!options.enabled) return undefined;
    const auth = call.getAuthContext();
    if (auth.transportSecurityType !== "ssl") return undefined;
    const san = auth.sslPeerCertificate?.subjectaltname ?? "";
    const uris = san.split(",").map((s) => s.trim()).filter((s) => s.startsWith("URI:")).map((s) =>
      s.slice(4)
    );
    const id = uris.map(tryParseSpiffeId).find((i) => i !== undefined);
    if (!id) return "XDS_AUTH: the secure port needs a client certificate with a SPIFFE ID of the mesh";
    if (id.trustDomain !== options.trustDomain) {
      return `XDS_AUTH: trust domain ${id.trustDomain} is not the mesh's (${options.trustDomain})`;
    }
    const key = workloadKeyOf(node);
    if (key === undefined) return `XDS_AUTH: node ${node.id} names no workload (NAMESPACE, WORKLOAD_NAME)`;
    const namespace = key.split("/")[0];
    if (namespace !== id.namespace) {
      return `XDS_AUTH: identity of namespace ${id.namespace} may not act as workload ${key}`;
    }
    return undefined;
  };
}
