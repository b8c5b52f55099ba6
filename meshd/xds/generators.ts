/**
 * Per-proxy generators: what each proxy receives of the current push context, encoded as the mesh's
 * own resource types (shared/proto). A proxy receives only what applies to it (meshd issue, "Push
 * context and xDS"): its own Workload (its inbound mutual TLS), every Service (its outbound
 * destinations, with proxied flags and identities for automatic mutual TLS), and the
 * AuthorizationPolicies and RequestAuthentications that select its workload. The messages are
 * resource_messages.ts; the cache of encoded resources xds_cache.ts.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  credentialNamesOf,
  policyAppliesTo,
  RESOURCE_TYPES,
  type ResourceTypeName,
  type SelectingPolicy,
  typeUrlOf,
} from "../../shared/mod.ts";
import type { PushContext, SelectingPolicyView, WorkloadView } from "../push_context/push_context.ts";
import { REGISTRY_CLUSTER_LABEL } from "../push_context/registry_services.ts";
import { autoRegisteredName, autoRegistrationRequest } from "../registry/auto_registration.ts";
import type { GeneratedList, GeneratedResource, ProxyNode, ResourceGenerator } from "./ads_types.ts";
import { GRPC_TYPE_URLS, grpcResources, isProxyless } from "./grpcgen/grpcgen.ts";
import { MEMO_KEYS, type MemoKeys, memoKeys, proxiedView, ROUTER_PREFIX, sameLabels } from "./memo_keys.ts";
import {
  authorizationMessage,
  credentialFor,
  jwtPolicyMessage,
  serviceMessage,
  verifiedNamespace,
  workloadMessage,
} from "./resource_messages.ts";
import { encodeGenerated, XdsCache, type XdsCacheStats } from "./xds_cache.ts";
import {
  meshL4RouteScope,
  meshTcpRouteConfigurations,
  meshTlsRouteConfigurations,
  type RouteConfiguration,
} from "../../shared/routing/mod.ts";

/**
 * What a sidecar's route configurations depend on (shared's meshL4RouteScope): none, its namespace, or its
 * labels too (`selection`: the workload's namespace and label set, as its memo keys have it).
 */
function sidecarRouteKey(ctx: PushContext, workload: WorkloadView, selection: string): string {
  const scope = meshL4RouteScope(ctx.virtualServices);
  return scope === "none" ? "" : scope === "namespace" ? workload.namespace : selection;
}

/** A sidecar's route configurations: the VirtualService `tls` and `tcp` rules bound to mesh (shared/routing). */
function sidecarL4Routes(ctx: PushContext, workload: WorkloadView): RouteConfiguration[] {
  const options = {
    defaultPortOf: (host: string) => {
      const s = ctx.services.find((s) => s.hosts.includes(host));
      return s?.ports.length === 1 ? s.ports[0].number : undefined;
    },
  };
  return [
    ...meshTlsRouteConfigurations(workload, ctx.virtualServices, ctx.services, options),
    ...meshTcpRouteConfigurations(workload, ctx.virtualServices, ctx.services, options),
  ];
}

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
 * @returns `<namespace>/<name>`, or undefined when the node names no workload; found once per node
 *   object (a stream names its node once and never changes it)
 */
export function workloadKeyOf(node: ProxyNode): string | undefined {
  // A stream's node never changes once named: its key is found once, and the same string object then
  // finds the workload without hashing a new string on every push.
  // One lookup per call (null: the node names no workload), not has() then get().
  const known = WORKLOAD_KEYS.get(node);
  if (known !== undefined) return known ?? undefined;
  const key = findWorkloadKey(node);
  WORKLOAD_KEYS.set(node, key ?? null);
  return key;
}

const WORKLOAD_KEYS = new WeakMap<ProxyNode, string | null>();

function findWorkloadKey(node: ProxyNode): string | undefined {
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

/** What the generator caches: meshd's DISCO_ENABLE_XDS_CACHE and the settings beside it. */
export interface GeneratorCacheOptions {
  /**
   * DISCO_ENABLE_XDS_CACHE; default true. False: every proxy's resources are built and encoded for it
   * alone, nothing shared between proxies or pushes (Istio without its cache; for comparison).
   */
  enabled?: boolean;
  /** DISCO_ENABLE_CDS_CACHE: Services (Envoy's clusters with their endpoints) are cached; default true. */
  services?: boolean;
  /** DISCO_ENABLE_RDS_CACHE: RouteConfigurations are cached; default true. */
  routes?: boolean;
  /** DISCO_XDS_CACHE_SIZE: most encoded resources kept; default 60,000. */
  maxEntries?: number;
  /** DISCO_XDS_CACHE_STATS: the xds_cache_* metrics' observers; absent: not collected. */
  stats?: XdsCacheStats;
}

/**
 * Generates each proxy's resources from the current push context. With the cache (the default), a
 * resource is encoded once and its bytes shared by every proxy and every push until its message
 * changes (xds_cache.ts), and a list that is the same for many proxies (every Service; the policies
 * of one namespace and label set; one workload's own resources) is built once per push context.
 */
export class PushContextGenerator implements ResourceGenerator {
  #ctx: PushContext;
  readonly #cache: XdsCache | undefined;
  readonly #cacheServices: boolean;
  readonly #cacheRoutes: boolean;
  // The Service list is the same for every proxy: built once per push context.
  #services: GeneratedList | undefined;
  // Lists that depend only on a workload (its own Workload) or on its namespace and labels (the
  // policies that select it): thousands of proxies of one deployment share one list per push context.
  #lists = new Map<string, GeneratedList>();
  // The previous push context's lists: one holding the same resources is reused, so its version and
  // its streams' shared name index (type_state.ts listIndex) carry over.
  #previous = new Map<string, GeneratedList>();
  // Memo keys by workload key, of this push context and the previous one: a workload whose namespace
  // and labels did not change keeps its keys, instead of sorting and serializing its labels again on
  // every push (10,000 workloads: tens of ms per push).
  #keys = new Map<string, MemoKeys>();
  #previousKeys = new Map<string, MemoKeys>();
  // Which of the previous push context's lists still hold for this one because what they are made of
  // is the very same (frozen) object: a context derived for connects or policy edits
  // (push_context/incremental.ts, policy_change.ts) shares everything the change did not touch.
  #carry: Carry = NO_CARRY;

  /** @param ctx the initial push context; @param options the cache (default: on, 60,000 entries) */
  constructor(ctx: PushContext, options: GeneratorCacheOptions = {}) {
    this.#ctx = ctx;
    this.#cache = options.enabled === false
      ? undefined
      : new XdsCache({ maxEntries: options.maxEntries ?? 60_000, stats: options.stats });
    this.#cacheServices = this.#cache !== undefined && options.services !== false;
    this.#cacheRoutes = this.#cache !== undefined && options.routes !== false;
  }

  /** Replaces the push context; the ADS server's push() then sends the differences. */
  update(ctx: PushContext): void {
    // A context derived for a connect or disconnect (push_context/incremental.ts) shares the last
    // one's services when none changed: the same Service list, and no config was deleted whose
    // cache entries would have to go.
    const prev = this.#ctx;
    const sameServices = ctx.services === prev.services;
    const sameGateways = ctx.gatewayRoutes === prev.gatewayRoutes;
    this.#carry = {
      workloads: ctx.proxySettings === prev.proxySettings ? prev.workloads : undefined,
      authorization: ctx.authorizationPolicies === prev.authorizationPolicies &&
        ctx.rootNamespace === prev.rootNamespace,
      jwtPolicy: ctx.requestAuthentications === prev.requestAuthentications && sameServices &&
        ctx.jwks === prev.jwks && ctx.jwksFetchMode === prev.jwksFetchMode &&
        ctx.jwksRefreshIntervalMs === prev.jwksRefreshIntervalMs,
      routes: sameGateways && sameServices && ctx.virtualServices === prev.virtualServices,
      credentials: sameGateways && ctx.credentials === prev.credentials,
    };
    this.#ctx = ctx;
    this.#previous = this.#lists;
    this.#previousKeys = this.#keys;
    this.#keys = new Map();
    this.#lists = new Map();
    if (sameServices) return;
    this.#services = undefined;
    this.#cache?.nextPush();
  }

  /** The current push context. */
  get context(): PushContext {
    return this.#ctx;
  }

  /** The xDS cache's entries (0 without the cache). */
  get cacheSize(): number {
    return this.#cache?.size ?? 0;
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
    const shared = this.#cache !== undefined;
    switch (typeUrl) {
      case TYPE_URLS.workload: {
        if (!workload) return EMPTY_LIST;
        // The proxy asking is connected, so its workload is proxied: the push its connection set off
        // (push_context/incremental.ts withConnected) makes that very view. Answering with it now
        // spares each connecting proxy a second Workload response (an encoding, a write and an ACK);
        // the push then finds the same bytes and sends nothing. A gateway's workload never is.
        const connecting = !workload.proxied && !node.id.startsWith(ROUTER_PREFIX);
        const keys = this.#keysOf(workload);
        const view = connecting ? proxiedView(workload) : workload;
        return this.#memo(connecting ? keys.connectingWorkload : keys.workload, shared, () => [
          this.#encode(
            RESOURCE_TYPES.workload,
            workload.key,
            workloadMessage(view, ctx.proxySettings),
            shared,
          ),
        ], this.#carry.workloads?.get(workload.key) === workload);
      }
      case TYPE_URLS.service: {
        const build = () =>
          ctx.services.map((s) =>
            this.#encode(RESOURCE_TYPES.service, s.key, serviceMessage(s), this.#cacheServices)
          );
        if (!this.#cacheServices) return listOf(build());
        return this.#services ??= this.#memo("s", true, build);
      }
      case TYPE_URLS.authorization:
        if (!workload) return EMPTY_LIST;
        return this.#memo(
          this.#keysOf(workload).authorization,
          shared,
          () =>
            this.#selecting(ctx.authorizationPolicies, workload).map((p) =>
              this.#encode(
                RESOURCE_TYPES.authorization,
                p.key,
                authorizationMessage(p, ctx.rootNamespace),
                shared,
              )
            ),
          this.#carry.authorization,
        );
      case TYPE_URLS.jwtPolicy:
        if (!workload) return EMPTY_LIST;
        return this.#memo(
          this.#keysOf(workload).jwtPolicy,
          shared,
          () =>
            this.#selecting(ctx.requestAuthentications, workload).map((p) =>
              this.#encode(RESOURCE_TYPES.jwtPolicy, p.key, jwtPolicyMessage(p, ctx), shared)
            ),
          this.#carry.jwtPolicy,
        );
      case TYPE_URLS.routeConfiguration:
        if (!workload) return EMPTY_LIST;
        {
          // A gateway proxy (Istio's `router~` node) never gets a sidecar's routes, selected or not.
          const gateway = ctx.gatewayRoutes.get(workload.key) ??
            (node.id.startsWith(ROUTER_PREFIX) ? [] : undefined);
          // A gateway's per workload (bind ports come from the services that select it); a sidecar's
          // (the VirtualService `tls` and `tcp` rules bound to mesh) per what their matches select.
          const key = gateway
            ? workload.key
            : `mesh\u0000${sidecarRouteKey(ctx, workload, this.#keysOf(workload).authorization)}`;
          // A gateway's key is kept per workload view (#keysOf); a sidecar's depends on this context's rules.
          return this.#memo(
            gateway ? this.#keysOf(workload).routes : `r\u0000${key}`,
            this.#cacheRoutes,
            () =>
              (gateway ?? sidecarL4Routes(ctx, workload)).map((rc) =>
                this.#encode(
                  RESOURCE_TYPES.routeConfiguration,
                  rc.name,
                  { ...rc },
                  this.#cacheRoutes,
                  `${key}\u0000${rc.name}`,
                )
              ),
            this.#carry.routes,
          );
        }
      case TYPE_URLS.tlsCredential:
        // Private keys go only to a proxy whose certificate proves its namespace, never to what a node
        // merely claims (Istio's SecretGen needs a verified identity of the secret's namespace).
        if (!workload || verifiedNamespace(node) !== workload.namespace) return EMPTY_LIST;
        // Only the credentials its own route configurations name, from its own namespace (as Istio).
        return this.#memo(
          this.#keysOf(workload).credentials,
          shared,
          () =>
            credentialNamesOf(ctx.gatewayRoutes.get(workload.key) ?? []).flatMap((name) => {
              const found = credentialFor(ctx.credentials, workload.namespace, name);
              if (!found) return [];
              return [this.#encode(
                RESOURCE_TYPES.tlsCredential,
                name,
                { name, ...found },
                shared,
                `${workload.namespace}\u0000${name}`,
              )];
            }),
          this.#carry.credentials,
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
    if (this.#cache) this.#lists.set(key, list);
    return list;
  }

  /**
   * The list of `key` for this push context: built once when `shared`, and then the previous push
   * context's list when it holds the very same resources; built for this proxy alone otherwise.
   * `carry`: what the list is made of is the previous context's own objects, so the previous list
   * (when there is one) is taken without building.
   */
  #memo(key: string, shared: boolean, build: () => GeneratedResource[], carry = false): GeneratedList {
    if (!shared) return listOf(build());
    let list = this.#lists.get(key);
    if (!list) {
      const previous = this.#previous.get(key);
      if (carry && previous) {
        list = previous;
      } else {
        const resources = build();
        list = previous && sameResources(previous.resources, resources) ? previous : listOf(resources);
      }
      this.#lists.set(key, list);
    }
    return list;
  }

  /** The memo keys of a workload: found once per view (every stream of a push asks for them). */
  #keysOf(w: WorkloadView): MemoKeys {
    let keys = MEMO_KEYS.get(w);
    if (keys !== undefined) return keys;
    keys = this.#keys.get(w.key);
    if (keys === undefined || keys.namespace !== w.namespace || !sameLabels(keys.labels, w.labels)) {
      const old = this.#previousKeys.get(w.key);
      keys = old !== undefined && old.namespace === w.namespace && sameLabels(old.labels, w.labels)
        ? old
        : memoKeys(w);
      this.#keys.set(w.key, keys);
    }
    MEMO_KEYS.set(w, keys);
    return keys;
  }

  #selecting<S extends SelectingPolicy["spec"]>(
    policies: readonly SelectingPolicyView<S>[],
    workload: WorkloadView | undefined,
  ): SelectingPolicyView<S>[] {
    if (!workload) return [];
    return policies.filter((p) => policyAppliesTo(p, workload, { rootNamespace: this.#ctx.rootNamespace }));
  }

  /** Encodes a message, through the cache when `cached`. */
  #encode(
    type: ResourceTypeName,
    name: string,
    message: Record<string, unknown>,
    cached: boolean,
    scope = name,
  ): GeneratedResource {
    if (!cached || !this.#cache) return encodeGenerated(type, name, message);
    return this.#cache.get(type, name, scope, message);
  }
}

function sameResources(a: readonly GeneratedResource[], b: readonly GeneratedResource[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

/** What of the previous push context's lists holds for the current one (PushContextGenerator.update). */
interface Carry {
  /** The previous context's workloads when the Workload lists' other input (proxySettings) is the same. */
  readonly workloads: ReadonlyMap<string, WorkloadView> | undefined;
  readonly authorization: boolean;
  readonly jwtPolicy: boolean;
  readonly routes: boolean;
  readonly credentials: boolean;
}

const NO_CARRY: Carry = {
  workloads: undefined,
  authorization: false,
  jwtPolicy: false,
  routes: false,
  credentials: false,
};

const EMPTY_LIST: GeneratedList = Object.freeze({ resources: [], version: "empty" }) as GeneratedList;

/** A list with a version made of its resources' names and versions. */
function listOf(resources: GeneratedResource[]): GeneratedList {
  // One update of the whole text, not four per resource: the same digest, and a cold sync builds a
  // list per connecting proxy (its Workload), where each update's op call cost more than the hash.
  let text = "";
  for (const r of resources) text += r.name + "\u0000" + r.version + "\u0001";
  return { resources, version: createHash("sha256").update(text).digest("hex").slice(0, 16) };
}
