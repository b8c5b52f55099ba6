/**
 * Debug over xDS (Istio's pilot/pkg/xds/debuggen.go and statusgen.go): a DiscoveryRequest whose type
 * URL is `istio.io/debug/<page>[?query]` (or `istio.io/debug` with one resource name
 * `<page>[?query]`, Istio's form) is answered with one resource, an Any whose type URL is
 * `istio.io/debug/<page>` and whose value is the page's body (JSON; PEM for rootCert), rendered by
 * the same {@link DebugPages} as the debug HTTP interface.
 *
 * Access, as Istio with ENABLE_DEBUG_ENDPOINT_AUTH (its default) and XDS_AUTH:
 * - the caller must be authenticated: a client certificate of the mesh on the mutual-TLS port, or a
 *   bearer token meshd's CA accepts (`authorization: Bearer <token>` in the gRPC metadata). On the
 *   plain-text port (Istio's 15010) nothing is authenticated, so debug requests are refused, unless
 *   XDS_AUTH_PLAINTEXT, which makes meshd authenticate plain-text requests too (a token);
 * - an identity of the root (system) namespace may read every page; any other identity only syncz
 *   and config_dump, limited to the proxies of its own namespace;
 * - otherwise the stream ends with UNAUTHENTICATED or PERMISSION_DENIED and the reason.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import type { AuthResult, Credentials } from "../ca/mod.ts";
import {
  DEBUG_TYPE_URL,
  type DebugAnswer,
  type DebugRequest,
  type DebugResponder,
  type XdsTransport,
} from "../xds/ads_types.ts";
import { type DebugPages, PROXY_PAGES } from "./debug_pages.ts";

/** Options of {@link debugResponder}. */
export interface DebugXdsOptions {
  /** The root namespace (meshConfig rootNamespace): its identities may read every page. */
  rootNamespace: string;
  /** XDS_AUTH: when false meshd authenticates no xDS client, and so answers no debug request. */
  xdsAuth: boolean;
  /** XDS_AUTH_PLAINTEXT: authenticate requests on the plain-text port too. */
  authPlaintext: boolean;
  /** The CA's authenticator (client certificate, then bearer token); absent without a CA. */
  authenticate?: (credentials: Credentials) => Promise<AuthResult>;
  /** A refused request, with the reason the client also gets (for meshd's log). */
  onRefused?: (peer: string, reason: string) => void;
}

/** The page a debug request asks for. */
interface PageRequest {
  name: string;
  query: URLSearchParams;
  /** The resource name of the answer: `<page>[?query]`. */
  resourceName: string;
}

function parseRequest(request: DebugRequest): PageRequest | string {
  let target: string;
  if (request.typeUrl === DEBUG_TYPE_URL) {
    if (request.resourceNames.length !== 1) {
      return `${DEBUG_TYPE_URL} needs exactly one resource name, the page (e.g. syncz); got ${request.resourceNames.length}`;
    }
    target = request.resourceNames[0];
  } else {
    target = request.typeUrl.slice(DEBUG_TYPE_URL.length + 1);
  }
  target = target.replace(/^\/?(debug\/)?/, "");
  const q = target.indexOf("?");
  const name = q < 0 ? target : target.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : target.slice(q + 1));
  // Istio's StatusGen form: `istio.io/debug/config_dump` with the proxy as the one resource name.
  if (name === "config_dump" && !query.has("proxyID") && request.resourceNames.length === 1) {
    query.set("proxyID", request.resourceNames[0]);
  }
  return { name, query, resourceName: target };
}

type Caller = { ok: true; namespace: string; id: string } | { ok: false; reason: string };

async function identify(
  call: Parameters<DebugResponder>[0],
  transport: XdsTransport,
  options: DebugXdsOptions,
): Promise<Caller> {
  if (!options.xdsAuth) {
    return {
      ok: false,
      reason: "meshd authenticates no xDS client (XDS_AUTH=false), so it answers no debug request",
    };
  }
  // The listener decides, not the auth context: grpc-js shows none for a TLS client without a
  // certificate (one that authenticates with a token).
  const tls = transport === "tls";
  if (!tls && !options.authPlaintext) {
    return {
      ok: false,
      reason: "requests on the plain-text port are not authenticated (XDS_AUTH_PLAINTEXT=false); use the " +
        "mutual-TLS port (--secureGRPCAddr) with a mesh certificate or a token",
    };
  }
  if (!options.authenticate) {
    return {
      ok: false,
      reason: "meshd runs no CA (ENABLE_CA_SERVER=false), so it cannot verify a credential",
    };
  }
  const authorization = call.metadata.get("authorization")[0];
  const der = tls ? call.getAuthContext().sslPeerCertificate?.raw : undefined;
  const r = await options.authenticate({
    authorization: typeof authorization === "string" ? authorization : undefined,
    peerCertificateDer: der ? new Uint8Array(der) : undefined,
  });
  if (!r.ok) return { ok: false, reason: r.reason };
  const { trustDomain, namespace, serviceAccount } = r.identity;
  return { ok: true, namespace, id: `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}` };
}

/**
 * The debug responder for the ADS server.
 *
 * @param pages the debug pages (shared with the HTTP interface)
 * @param options root namespace, XDS_AUTH, XDS_AUTH_PLAINTEXT and the CA's authenticator
 */
export function debugResponder(pages: DebugPages, options: DebugXdsOptions): DebugResponder {
  const refuse = (call: Parameters<DebugResponder>[0], code: grpc.status, details: string): DebugAnswer => {
    options.onRefused?.(call.getPeer(), details);
    return { ok: false, code, details };
  };
  return async (call, request) => {
    const page = parseRequest(request);
    if (typeof page === "string") return refuse(call, grpc.status.INVALID_ARGUMENT, page);
    const caller = await identify(call, request.transport, options);
    if (!caller.ok) {
      return refuse(
        call,
        grpc.status.UNAUTHENTICATED,
        `${request.typeUrl}: authentication required: ${caller.reason}`,
      );
    }
    const system = caller.namespace === options.rootNamespace;
    if (!system && !PROXY_PAGES.has(page.name)) {
      return refuse(
        call,
        grpc.status.PERMISSION_DENIED,
        `${request.typeUrl}: the debug info is not available for identity ${caller.id}: only the root namespace ` +
          `(${options.rootNamespace}) may read it; other namespaces may read ${
            [...PROXY_PAGES].join(" and ")
          } ` +
          `of their own proxies`,
      );
    }
    const rendered = pages.render({
      name: page.name,
      query: page.query,
      namespace: system ? undefined : caller.namespace,
    });
    if (rendered.status !== 200) {
      let reason = rendered.body.trim();
      try {
        reason = (JSON.parse(rendered.body) as { error?: string }).error ?? reason;
      } catch {
        // a text page
      }
      const code = rendered.status === 404 ? grpc.status.NOT_FOUND : grpc.status.INVALID_ARGUMENT;
      return { ok: false, code, details: `${request.typeUrl}: ${reason}` };
    }
    return {
      ok: true,
      resources: [{
        name: page.resourceName,
        typeUrl: `${DEBUG_TYPE_URL}/${page.name}`,
        body: new TextEncoder().encode(rendered.body),
      }],
    };
  };
}
