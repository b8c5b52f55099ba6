/**
 * Per-proxy generators: what each proxy receives of the current push context, encoded as the mesh's
 * own resource types (shared/proto). A proxy receives only what applies to it (meshd issue, "Push
 * context and xDS"): its own Workload (its inbound mutual TLS), every Service (its outbound
 * destinations, with proxied flags and identities for automatic mutual TLS), and the
 * AuthorizationPolicies and RequestAuthentications that select its workload.
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import { createHash } from "node:crypto";
import {
  type AuthorizationPolicySpec,
  CA_SECRET_SUFFIX,
  credentialNamesOf,
  encodeResource,
  jwksFetcherOf,
  jwksSourceKey,
  policyAppliesTo,
  type RequestAuthenticationSpec,
  RESOURCE_TYPES,
  type ResourceTypeName,
  type SelectingPolicy,
  type TlsCredential,
  tryParseSpiffeId,
  typeUrlOf,
} from "../../shared/mod.ts";
import type { PushContext, SelectingPolicyView, WorkloadView } from "../push_context/push_context.ts";
import { jwksTimeoutMs } from "../jwks/resolver.ts";
import { REGISTRY_CLUSTER_LABEL } from "../push_context/registry_services.ts";
import { autoRegisteredName, autoRegistrationRequest } from "../registry/auto_registration.ts";
import type { GeneratedList, GeneratedResource, ProxyNode, ResourceGenerator } from "./ads_types.ts";
import { GRPC_TYPE_URLS, grpcResources, isProxyless } from "./grpcgen/grpcgen.ts";

/** Type URLs served, by resource type. */
export const TYPE_URLS: {
  readonly workload: string;
  readonly service: string;
  readonly authorization: string;
  readonly jwtPolicy: string;
  readonly routeConfiguration: string;
  readonly tlsCredential: string;
} = {
  workload: typeUrlOf(RESOURCE_TYPES.workload),
  service: typeUrlOf(RESOURCE_TYPES.service),
  authorization: typeUrlOf(RESOURCE_TYPES.authorization),
  jwtPolicy: typeUrlOf(RESOURCE_TYPES.jwtPolicy),
  routeConfiguration: typeUrlOf(RESOURCE_TYPES.routeConfiguration),
  tlsCredential: typeUrlOf(RESOURCE_TYPES.tlsCredential),
};

/**
 * The workload a proxy stands for: its auto-registered WorkloadEntry when it names a WorkloadGroup
 * (AUTO_REGISTER_GROUP), else node metadata NAMESPACE and WORKLOAD_NAME (as Istio's agent sends
 * them), else the Istio node id `sidecar~<ip>~<name>.<namespace>~<namespace>.svc.<domain>`.
 *
 * @returns `<namespace>/<name>`, or undefined when the node names no workload
 */
export function workloadKeyOf(node: ProxyNode): string | undefined {
  const auto = autoRegistrationRequest(node);
  if (auto && auto.namespace && auto.ip) return `${auto.namespace}/${autoRegisteredName(auto)}`;
  const ns = node.metadata.NAMESPACE;
  const name = node.metadata.WORKLOAD_NAME;
  if (typeof ns === "string" && typeof name === "string" && ns && name) return `${ns}/${name}`;
  const parts = node.id.split("~");
  if (parts.length === 4) {
    const dot = parts[2].lastIndexOf(".");
    if (dot > 0) return `${parts[2].slice(dot + 1)}/${parts[2].slice(0, dot)}`;
  }
  return undefined;
}

/**
 * Whether a registry's workload (labelled with its cluster) is in the proxy's cluster: a proxy that
 * names another one in its node metadata `CLUSTER_ID` is not that pod, as istiod looks a proxy up only
 * in the registry of its own cluster. A proxy that names none is taken to be in meshd's.
 */
function inProxyCluster(w: WorkloadView, node: ProxyNode): boolean {
  const cluster = w.labels[REGISTRY_CLUSTER_LABEL];
  const proxyCluster = node.metadata.CLUSTER_ID;
  return cluster === undefined || typeof proxyCluster !== "string" || proxyCluster === "" ||
    proxyCluster === cluster;
}

/** Generates each proxy's resources from the current push context. */
export class PushContextGenerator implements ResourceGenerator {
  #ctx: PushContext;
  // Encoded resources of the current push context, shared by every proxy that receives them.
  #cache = new Map<string, GeneratedResource>();
  // The Service list is the same for every proxy: built once per push context.
  #services: GeneratedList | undefined;
  // Lists that depend only on a workload (its own Workload) or on its namespace and labels (the
  // policies that select it): thousands of proxies of one deployment share one list per push context.
  #lists = new Map<string, GeneratedList>();

  /** @param ctx the initial push context */
  constructor(ctx: PushContext) {
    this.#ctx = ctx;
  }

  /** Replaces the push context; the ADS server's push() then sends the differences. */
  update(ctx: PushContext): void {
    this.#ctx = ctx;
    this.#cache = new Map();
    this.#services = undefined;
    this.#lists = new Map();
  }

  /** The current push context. */
  get context(): PushContext {
    return this.#ctx;
  }

  version(): string {
    return this.#ctx.version;
  }

  generate(node: ProxyNode, typeUrl: string): GeneratedList | undefined {
    const ctx = this.#ctx;
    const key = workloadKeyOf(node);
    const found = key === undefined ? undefined : ctx.workloads.get(key);
    const workload = found && inProxyCluster(found, node) ? found : undefined;
    // Proxyless gRPC reads Envoy's types, not the mesh's: see grpcgen/.
    if (isProxyless(node)) return this.#proxyless(typeUrl, workload);
    switch (typeUrl) {
      case TYPE_URLS.workload:
        if (!workload) return EMPTY_LIST;
        return this.#memo(
          `w\u0000${workload.key}`,
          () =>
            listOf([
              this.#encode(RESOURCE_TYPES.workload, workload.key, () =>
                workloadMessage(workload, ctx.proxySettings)),
            ]),
        );
      case TYPE_URLS.service:
        return this.#services ??= listOf(
          ctx.services.map((s) =>
            this.#encode(RESOURCE_TYPES.service, s.key, () => ({
              name: s.name,
              namespace: s.namespace,
              hosts: s.hosts,
              addresses: s.addresses,
              ports: s.ports,
              endpoints: s.endpoints,
              location: s.location,
              resolution: s.resolution,
            }))
          ),
        );
      case TYPE_URLS.authorization:
        if (!workload) return EMPTY_LIST;
        return this.#memo(
          `a\u0000${selectionKey(workload)}`,
          () =>
            listOf(
              this.#selecting(ctx.authorizationPolicies, workload).map((p) =>
                this.#encode(
                  RESOURCE_TYPES.authorization,
                  p.key,
                  () => authorizationMessage(p, ctx.rootNamespace),
                )
              ),
            ),
        );
      case TYPE_URLS.jwtPolicy:
        if (!workload) return EMPTY_LIST;
        return this.#memo(
          `j\u0000${selectionKey(workload)}`,
          () =>
            listOf(
              this.#selecting(ctx.requestAuthentications, workload).map((p) =>
                this.#encode(RESOURCE_TYPES.jwtPolicy, p.key, () => jwtPolicyMessage(p, ctx))
              ),
            ),
        );
      case TYPE_URLS.routeConfiguration:
        if (!workload) return EMPTY_LIST;
        // Per workload, not per label set: bind ports come from the services that select the workload.
        return this.#memo(
          `r\u0000${workload.key}`,
          () =>
            listOf(
              (ctx.gatewayRoutes.get(workload.key) ?? []).map((rc) =>
                this.#encode(
                  RESOURCE_TYPES.routeConfiguration,
                  rc.name,
                  () => ({ ...rc }),
                  `${workload.key}\u0000${rc.name}`,
                )
              ),
            ),
        );
      case TYPE_URLS.tlsCredential:
        // Private keys go only to a proxy whose certificate proves its namespace, never to what a node
        // merely claims (Istio's SecretGen needs a verified identity of the secret's namespace).
        if (!workload || verifiedNamespace(node) !== workload.namespace) return EMPTY_LIST;
        // Only the credentials its own route configurations name, from its own namespace (as Istio).
        return this.#memo(
          `t\u0000${workload.key}`,
          () =>
            listOf(
              credentialNamesOf(ctx.gatewayRoutes.get(workload.key) ?? []).flatMap((name) => {
                const found = credentialFor(ctx.credentials, workload.namespace, name);
                if (!found) return [];
                return [this.#encode(
                  RESOURCE_TYPES.tlsCredential,
                  name,
                  () => ({ name, ...found }),
                  `${workload.namespace}\u0000${name}`,
                )];
              }),
            ),
        );
      default:
        return undefined;
    }
  }

  #proxyless(typeUrl: string, workload: WorkloadView | undefined): GeneratedList | undefined {
    // Only listeners depend on the workload (its server listeners); the rest is shared by every node.
    const perWorkload = typeUrl === GRPC_TYPE_URLS.listener ? workload?.key ?? "" : "";
    const key = `g\u0000${typeUrl}\u0000${perWorkload}`;
    const hit = this.#lists.get(key);
    if (hit) return hit;
    const policies = this.#selecting(this.#ctx.authorizationPolicies, workload);
    const encoded = grpcResources(this.#ctx, typeUrl, workload, policies);
    if (encoded === undefined) return undefined;
    const list = listOf(encoded.map((r) => ({
      name: r.name,
      version: createHash("sha256").update(r.body).digest("hex").slice(0, 16),
      body: r.body,
    })));
    this.#lists.set(key, list);
    return list;
  }

  #memo(key: string, build: () => GeneratedList): GeneratedList {
    let list = this.#lists.get(key);
    if (!list) {
      list = build();
      this.#lists.set(key, list);
    }
    return list;
  }

  #selecting<S extends SelectingPolicy["spec"]>(
    policies: readonly SelectingPolicyView<S>[],
    workload: WorkloadView | undefined,
  ): SelectingPolicyView<S>[] {
    if (!workload) return [];
    return policies.filter((p) => policyAppliesTo(p, workload, { rootNamespace: this.#ctx.rootNamespace }));
  }

  #encode(
    type: ResourceTypeName,
    name: string,
    build: () => Record<string, unknown>,
    scope = name,
  ): GeneratedResource {
    const cacheKey = `${type}\u0000${scope}`;
    let hit = this.#cache.get(cacheKey);
    if (!hit) {
      const body = encodeResource(type, build());
      hit = { name, version: createHash("sha256").update(body).digest("hex").slice(0, 16), body };
      this.#cache.set(cacheKey, hit);
    }
    return hit;
  }
}

const EMPTY_LIST: GeneratedList = Object.freeze({ resources: [], version: "empty" }) as GeneratedList;

const SELECTION_KEYS = new WeakMap<WorkloadView, string>();

/** What decides which policies select a workload: its namespace and labels. */
function selectionKey(w: WorkloadView): string {
  let key = SELECTION_KEYS.get(w);
  if (key === undefined) {
    key = w.namespace + "\u0000" +
      JSON.stringify(Object.entries(w.labels).sort(([a], [b]) => a < b ? -1 : 1));
    SELECTION_KEYS.set(w, key);
  }
  return key;
}

/** A list with a version made of its resources' names and versions. */
function listOf(resources: GeneratedResource[]): GeneratedList {
  const h = createHash("sha256");
  for (const r of resources) h.update(r.name).update("\u0000").update(r.version).update("\u0001");
  return { resources, version: h.digest("hex").slice(0, 16) };
}

function workloadMessage(w: WorkloadView, settings: ProxySettings): Record<string, unknown> {
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

function authorizationMessage(
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

function jwtPolicyMessage(
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
function credentialFor(
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
function verifiedNamespace(node: ProxyNode): string | undefined {
  return node.verifiedIdentity === undefined ? undefined : tryParseSpiffeId(node.verifiedIdentity)?.namespace;
}
