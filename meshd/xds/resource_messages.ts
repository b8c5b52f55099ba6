/**
 * The messages of the mesh's resource types (shared/proto) that the generators encode, built from
 * the push context's views: one function per type, pure, so that equal views give equal messages
 * (the xDS cache, xds_cache.ts, relies on it), and the node checks that decide who may receive a
 * resource at all.
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import {
  type AuthorizationPolicySpec,
  CA_SECRET_SUFFIX,
  jwksFetcherOf,
  jwksSourceKey,
  type RequestAuthenticationSpec,
  type TlsCredential,
  tryParseSpiffeId,
} from "../../shared/mod.ts";
import type {
  PushContext,
  SelectingPolicyView,
  ServiceView,
  WorkloadView,
} from "../push_context/push_context.ts";
import { jwksTimeoutMs } from "../jwks/resolver.ts";
import type { ProxyNode } from "./ads_types.ts";

/** A Service as every proxy receives it (its outbound destinations). */
export function serviceMessage(s: ServiceView): Record<string, unknown> {
  return {
    name: s.name,
    namespace: s.namespace,
    hosts: s.hosts,
    addresses: s.addresses,
    ports: s.ports,
    endpoints: s.endpoints,
    location: s.location,
    resolution: s.resolution,
  };
}

/** A proxy's own Workload: its inbound mutual TLS, identity and data-path settings. */
export function workloadMessage(w: WorkloadView, settings: ProxySettings): Record<string, unknown> {
  return {
    name: w.name,
    namespace: w.namespace,
    serviceAccount: w.serviceAccount,
    trustDomain: w.trustDomain,
    addresses: w.addresses,
    labels: w.labels,
    proxied: w.proxied,
    ports: w.ports,
    inboundMtls: w.inboundMtls,
    defaultMtls: w.defaultMtls,
    network: w.network,
    locality: w.locality,
    weight: w.weight,
    settings: { ...settings, ...w.proxyConfig },
  };
}

/** An AuthorizationPolicy as the proxies it selects receive it. */
export function authorizationMessage(
  p: SelectingPolicyView<AuthorizationPolicySpec>,
  rootNamespace: string,
): Record<string, unknown> {
  const spec = p.spec;
  const withSelector = Object.keys(spec.selector?.matchLabels ?? {}).length > 0;
  return {
    name: p.name,
    namespace: p.namespace,
    action: spec.action ?? "ALLOW",
    scope: withSelector ? "WORKLOAD_SELECTOR" : p.namespace === rootNamespace ? "GLOBAL" : "NAMESPACE",
    rules: spec.rules ?? [],
    rulesAbsent: spec.rules === undefined,
  };
}

/** A RequestAuthentication as a JwtPolicy: its rules, with the keys meshd fetched or who fetches them. */
export function jwtPolicyMessage(
  p: SelectingPolicyView<RequestAuthenticationSpec>,
  ctx: PushContext,
): Record<string, unknown> {
  const rules = p.spec.jwtRules ?? [];
  return {
    name: p.name,
    namespace: p.namespace,
    providers: rules.map((r) => {
      const byProxy = jwksFetcherOf(r, { mode: ctx.jwksFetchMode, services: ctx.services }) === "proxy";
      return {
        issuer: r.issuer,
        audiences: r.audiences ?? [],
        // Inline keys travel as they are; keys meshd fetches are its last good fetch, else empty.
        jwks: r.jwks ?? (byProxy ? "" : ctx.jwks.get(jwksSourceKey(r) ?? "") ?? ""),
        jwksUri: r.jwksUri ?? "",
        fromHeaders: r.fromHeaders ?? [],
        fromParams: r.fromParams ?? [],
        fromCookies: r.fromCookies ?? [],
        outputPayloadToHeader: r.outputPayloadToHeader ?? "",
        forwardOriginalToken: r.forwardOriginalToken ?? false,
        outputClaimToHeaders: r.outputClaimToHeaders ?? [],
        spaceDelimitedClaims: r.spaceDelimitedClaims ?? [],
        ...(byProxy
          ? {
            jwksFetcher: "PROXY",
            jwksRefreshIntervalMs: ctx.jwksRefreshIntervalMs,
            jwksFetchTimeoutMs: jwksTimeoutMs(r),
          }
          : {}),
      };
    }),
  };
}

/**
 * The credential of an SDS name `kubernetes://<secret>` in a namespace: the Secret's certificate, key
 * and CA; for `<secret>-cacert` without such a Secret, only the CA of `<secret>` (Istio's fallback).
 */
export function credentialFor(
  credentials: ReadonlyMap<string, TlsCredential>,
  namespace: string,
  name: string,
): Record<string, string> | undefined {
  const secret = name.slice(name.indexOf("://") + 3);
  const own = credentials.get(`${namespace}/${secret}`);
  if (own) {
    return {
      certificateChain: own.certChainPem,
      privateKey: own.privateKeyPem,
      caCertificates: own.caPem,
      source: `${namespace}/${secret}`,
    };
  }
  if (!secret.endsWith(CA_SECRET_SUFFIX)) return undefined;
  const main = credentials.get(`${namespace}/${secret.slice(0, -CA_SECRET_SUFFIX.length)}`);
  if (!main || main.caPem === "") return undefined;
  return {
    certificateChain: "",
    privateKey: "",
    caCertificates: main.caPem,
    source: `${namespace}/${main.name}`,
  };
}

/** The namespace of the SPIFFE ID the node's TLS certificate proved, else undefined. */
export function verifiedNamespace(node: ProxyNode): string | undefined {
  return node.verifiedIdentity === undefined ? undefined : tryParseSpiffeId(node.verifiedIdentity)?.namespace;
}
