/**
 * XDS_AUTH on the mutual-TLS ADS listener: a proxy may act only as a workload of the namespace its
 * certificate names (Istio's DISCO_ENABLE_XDS_IDENTITY_CHECK: "clients may act only as namespaces
 * they are permitted"). The plain-text listener stays unauthenticated, as Istio's 15010 without
 * XDS_AUTH_PLAINTEXT, and its streams never have a verified identity.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { tryParseSpiffeId } from "../../shared/mod.ts";
import type { ProxyNode, XdsAuthorization, XdsTransport } from "../xds/ads_types.ts";
import { workloadKeyOf } from "../xds/generators.ts";

/** Options of {@link xdsAuthorizer}. */
export interface XdsAuthOptions {
  /** XDS_AUTH. */
  enabled: boolean;
  /** The mesh trust domain; certificates of other trust domains are refused. */
  trustDomain: string;
}

/**
 * The SPIFFE ID of the client certificate a TLS stream's handshake verified, else undefined. grpc-js
 * reports an auth context only for a verified certificate (`authorized`), so a client that sent none,
 * or one of another CA, has none.
 */
export function verifiedSpiffeId(call: grpc.ServerDuplexStream<unknown, unknown>): string | undefined {
  const auth = call.getAuthContext();
  if (auth.transportSecurityType !== "ssl") return undefined;
  const san = auth.sslPeerCertificate?.subjectaltname ?? "";
  return san.split(",").map((s) => s.trim()).filter((s) => s.startsWith("URI:")).map((s) => s.slice(4))
    .find((u) => tryParseSpiffeId(u) !== undefined);
}

/**
 * The authorize hook for the ADS server: on the TLS listener a stream needs a verified mesh
 * certificate of the mesh's trust domain whose namespace is the workload's (with XDS_AUTH), and its
 * SPIFFE ID becomes the node's verified identity (which gateway credentials require, as Istio's
 * SecretGen). On the plain-text listener every stream is accepted without one.
 */
export function xdsAuthorizer(
  options: XdsAuthOptions,
): (
  call: grpc.ServerDuplexStream<unknown, unknown>,
  node: ProxyNode,
  transport: XdsTransport,
) => XdsAuthorization {
  return (call, node, transport) => {
    if (transport === "plaintext") return { ok: true, verifiedIdentity: undefined };
    const uri = verifiedSpiffeId(call);
    const id = uri === undefined ? undefined : tryParseSpiffeId(uri);
    const verified = id !== undefined && id.trustDomain === options.trustDomain ? uri : undefined;
    if (!options.enabled) return { ok: true, verifiedIdentity: verified };
    if (!id) {
      return {
        ok: false,
        reason: "XDS_AUTH: the secure port needs a verified client certificate with a SPIFFE ID of the mesh",
      };
    }
    if (id.trustDomain !== options.trustDomain) {
      return {
        ok: false,
        reason: `XDS_AUTH: trust domain ${id.trustDomain} is not the mesh's (${options.trustDomain})`,
      };
    }
    const key = workloadKeyOf(node);
    if (key === undefined) {
      return { ok: false, reason: `XDS_AUTH: node ${node.id} names no workload (NAMESPACE, WORKLOAD_NAME)` };
    }
    const namespace = key.split("/")[0];
    if (namespace !== id.namespace) {
      return {
        ok: false,
        reason: `XDS_AUTH: identity of namespace ${id.namespace} may not act as workload ${key}`,
      };
    }
    return { ok: true, verifiedIdentity: verified };
  };
}
