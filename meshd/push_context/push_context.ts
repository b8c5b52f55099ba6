/**
 * The push context: an immutable snapshot of everything proxies are told, built from the validated
 * config and the set of connected proxies, as istiod's PushContext. Built whole on every debounced
 * change; generators only read it. Sources: the policies seed ("What the service does", "Scope and
 * precedence rules"), the meshd issue ("Service registry", "Push context and xDS").
 *
 * @module
 */
import {
  DEFAULT_PROXY_SETTINGS,
  type ProxyConfigOverrides,
  proxyConfigOverrides,
  type ProxySettings,
} from "../../shared/proxy_settings/mod.ts";
import {
  type AuthorizationPolicySpec,
  effectivePeerAuthentication,
  endpointPort,
  formatSpiffeId,
  gatewayRouteConfigurations,
  type GatewaySpec,
  gatewaysSelecting,
  type JwksFetchMode,
  type NamedSpec,
  type ObjectMeta,
  parseTlsSecret,
  type PeerAuthenticationDecision,
  type RequestAuthenticationSpec,
  type RouteConfiguration,
  type ServicePortSpec,
  serviceSelectsWorkload,
  type TlsCredential,
  type VirtualServiceSpec,
  type WorkloadEntrySpec,
} from "../../shared/mod.ts";
import type { SecretResource, SpecByKind, SpecKind } from "../../shared/mod.ts";
import { serviceEntryPortProtocol } from "../../shared/protocol/mod.ts";
import { deepFreeze, FrozenMap } from "./frozen.ts";
import { tcpAuthorizationWarnings } from "./authz_warnings.ts";
import { inlineMtls, withWorkloadMtls } from "./auto_mtls.ts";
import { registryBoundPorts, registryServiceViews, type RegistrySnapshot } from "./registry_services.ts";

/**
 * A resource of the config snapshot, as the config store hands it over (or auto-registration makes
 * it): `kind` tells the type of `resource.spec`, as the config store's validation decoded it.
 */
export type ConfigResource =
  | {
    [K in SpecKind]: {
      kind: K;
      namespace: string;
      name: string;
      resource: { metadata: ObjectMeta; spec: SpecByKind[K] };
    };
  }[SpecKind]
  | { kind: "Secret"; namespace: string; name: string; resource: SecretResource };

/** The resources of one kind, typed by it: `OfKind<"WorkloadGroup">["resource"]["spec"]` is a WorkloadGroupSpec. */
export type OfKind<K extends ConfigResource["kind"]> = Extract<ConfigResource, { kind: K }>;

/** The effective inbound mutual TLS of one port, and what decided it. */
export interface PortMtlsView {
  /** Container port; 0 for the default of unbound ports. */
  readonly port: number;
  readonly mode: "DISABLE" | "PERMISSIVE" | "STRICT";
  /** `<namespace>/<name>` of the deciding PeerAuthentication, or empty. */
  readonly policy: string;
  readonly scope: string;
}

/** A workload as proxies and debug endpoints see it. */
export interface WorkloadView {
  /** `<namespace>/<name>`. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly trustDomain: string;
  /** spiffe://<trust domain>/ns/<namespace>/sa/<service account>. */
  readonly identity: string;
  readonly addresses: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: Readonly<Record<string, number>>;
  /** Connected proxy, or the label security.mesh.io/tlsMode: mesh (Istio's security.istio.io/tlsMode: istio). */
  readonly proxied: boolean;
  /** Ports bound to a service, with their effective mode. */
  readonly inboundMtls: readonly PortMtlsView[];
  /** Effective mode of every other port. */
  readonly defaultMtls: PortMtlsView;
  readonly network: string;
  readonly locality: string;
  readonly weight: number;
  /**
   * The workload's `proxy.istio.io/config` annotation (gatewayTopology.numTrustedProxies), over the
   * mesh config's settings; absent or empty: none.
   */
  readonly proxyConfig?: Readonly<ProxyConfigOverrides>;
}

/** A service endpoint. */
export interface EndpointView {
  /** `<namespace>/<name>` of the workload, or empty for an inline endpoint. */
  readonly workload: string;
  /** Empty for an inline endpoint that names only its network (behind that network's gateway). */
  readonly address: string;
  /** Service port number to endpoint port. */
  readonly ports: Readonly<Record<number, number>>;
  readonly proxied: boolean;
  /** SPIFFE ID to verify when proxied (secure naming), else empty. */
  readonly identity: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Service ports whose endpoint port is DISABLE: automatic mTLS sends plain text (auto_mtls.ts). */
  readonly mtlsDisabledPorts: readonly number[];
}

/** A port of a service. */
export interface ServicePortView {
  readonly name: string;
  readonly number: number;
  readonly targetPort: number;
  /** Upper case (shared/protocol); UNKNOWN (auto-detect) when the ServiceEntry names none. */
  readonly protocol: string;
}

/** A service from a ServiceEntry. */
export interface ServiceView {
  /** `<namespace>/<name>` of the ServiceEntry. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly hosts: readonly string[];
  readonly addresses: readonly string[];
  readonly ports: readonly ServicePortView[];
  readonly endpoints: readonly EndpointView[];
  readonly location: string;
  readonly resolution: string;
}

/**
 * A policy that selects workloads (AuthorizationPolicy or RequestAuthentication), as written. The
 * spec is the config store's frozen object: its type is the generated one, but it never changes.
 */
export interface SelectingPolicyView<S> {
  /** `<namespace>/<name>`. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly metadata: { readonly namespace: string; readonly name: string };
  readonly spec: S;
}

/** The immutable push context: every collection is frozen (FrozenMaps, frozen arrays and objects). */
export interface PushContext {
  /** Changes on every build: `<revision>` of the config plus a build counter. */
  readonly version: string;
  /** When it was built, ms since the epoch. */
  readonly builtAt: number;
  readonly rootNamespace: string;
  readonly trustDomain: string;
  readonly workloads: ReadonlyMap<string, WorkloadView>;
  readonly services: readonly ServiceView[];
  readonly authorizationPolicies: readonly SelectingPolicyView<AuthorizationPolicySpec>[];
  readonly requestAuthentications: readonly SelectingPolicyView<RequestAuthenticationSpec>[];
  /** Gateways and VirtualServices, for the route configurations of gateway proxies. */
  readonly gateways: readonly NamedSpec<GatewaySpec>[];
  readonly virtualServices: readonly NamedSpec<VirtualServiceSpec>[];
  /** DISCO_SCOPE_GATEWAY_TO_NAMESPACE. */
  readonly scopeGatewayToNamespace: boolean;
  /** Fetched key sets by source (a jwksUri, or `oidc:<issuer>`): see meshd/jwks. */
  readonly jwks: ReadonlyMap<string, string>;
  /** DISCO_JWT_ENABLE_REMOTE_JWKS: who fetches each rule's keys (shared's jwksFetcherOf). */
  readonly jwksFetchMode: JwksFetchMode;
  /** DISCO_JWT_PUB_KEY_REFRESH_INTERVAL, ms: also the refresh interval of proxies that fetch. */
  readonly jwksRefreshIntervalMs: number;
  /** Gateway TLS credentials from the config's Secrets, by `<namespace>/<name>`. */
  readonly credentials: ReadonlyMap<string, TlsCredential>;
  /** The route configurations of each workload that a Gateway selects, by workload key. */
  readonly gatewayRoutes: ReadonlyMap<string, readonly RouteConfiguration[]>;
  /** Gateway servers that are not served, one sentence each (meshd logs them as warnings). */
  readonly gatewayWarnings: readonly string[];
  /** AuthorizationPolicy rules that act otherwise on TCP ports (authz_warnings.ts); logged as warnings. */
  readonly authorizationWarnings: readonly string[];
  /** The mesh config's data-path settings, sent to every proxy in its Workload. */
  readonly proxySettings: Readonly<ProxySettings>;
  /** The service registry's own view (debug pages); absent without a registry. */
  readonly registry?: RegistrySnapshot["debug"];
}

/** Inputs beyond the config. */
export interface PushContextOptions {
  /** Version label for this build. */
  version: string;
  /** Root namespace; default mesh-system. */
  rootNamespace?: string;
  /** Trust domain; default cluster.local. */
  trustDomain?: string;
  /** DISCO_SCOPE_GATEWAY_TO_NAMESPACE; default false. */
  scopeGatewayToNamespace?: boolean;
  /** Keys (`<namespace>/<name>`) of workloads whose proxy is connected now. */
  connected?: ReadonlySet<string>;
  /** The JWKS resolver's last good key sets, by source; default none. */
  jwks?: ReadonlyMap<string, string>;
  /** DISCO_JWT_ENABLE_REMOTE_JWKS; default `meshd`. */
  jwksFetchMode?: JwksFetchMode;
  /** DISCO_JWT_PUB_KEY_REFRESH_INTERVAL, ms; default 20 minutes. */
  jwksRefreshIntervalMs?: number;
  /** The mesh config's data-path settings; default shared's DEFAULT_PROXY_SETTINGS. */
  proxySettings?: ProxySettings;
  /** A service registry's workloads and services (meshd/kube_registry), beside the config's. */
  registry?: RegistrySnapshot;
}

const TLS_MODE_LABELS: Record<string, string> = {
  "security.mesh.io/tlsMode": "mesh",
  "security.istio.io/tlsMode": "istio",
};

const keyOf = (r: { namespace: string; name: string }): string => `${r.namespace}/${r.name}`;

/**
 * Builds the push context. Pure: the same inputs give an equal context. Everything it holds is
 * frozen: maps are {@link FrozenMap}s, objects and arrays are frozen deeply.
 *
 * @param configResources every valid resource of the config snapshot (a registry's workloads are added)
 */
export function buildPushContext(
  configResources: readonly ConfigResource[],
  options: PushContextOptions,
): PushContext {
  const resources: readonly ConfigResource[] = options.registry
    ? [...configResources, ...options.registry.workloads]
    : configResources;
  const rootNamespace = options.rootNamespace ?? "mesh-system";
  const trustDomain = options.trustDomain ?? "cluster.local";
  const connected = options.connected ?? new Set<string>();
  const byKind = <K extends ConfigResource["kind"]>(kind: K): OfKind<K>[] =>
    resources.filter((r): r is OfKind<K> => r.kind === kind);
  const peerAuthentications = byKind("PeerAuthentication").map((r) => r.resource);
  const entries = byKind("WorkloadEntry");
  const serviceEntries = byKind("ServiceEntry");

  // A ServiceEntry selects WorkloadEntries of its own namespace only, so indexing by namespace keeps
  // the build linear in practice instead of services × workloads.
  const entriesByNamespace = new Map<string, OfKind<"WorkloadEntry">[]>();
  for (const we of entries) {
    const list = entriesByNamespace.get(we.namespace) ?? [];
    list.push(we);
    entriesByNamespace.set(we.namespace, list);
  }
  const selectedEntries = (se: OfKind<"ServiceEntry">): OfKind<"WorkloadEntry">[] => {
    const service = { metadata: { name: se.name, namespace: se.namespace }, spec: se.resource.spec };
    return (entriesByNamespace.get(se.namespace) ?? []).filter((we) =>
      serviceSelectsWorkload(service, { metadata: { namespace: we.namespace }, spec: we.resource.spec })
    );
  };

  // Ports of a workload that a service targets: only those get PeerAuthentication's portLevelMtls.
  const boundPorts = new Map<string, Set<number>>();
  for (const se of serviceEntries) {
    const ports = se.resource.spec.ports ?? [];
    for (const we of selectedEntries(se)) {
      const set = boundPorts.get(keyOf(we)) ?? new Set<number>();
      for (const p of ports) set.add(endpointPort(p, we.resource.spec.ports));
      boundPorts.set(keyOf(we), set);
    }
  }
  registryBoundPorts(options.registry, boundPorts);

  const workloads = new Map<string, WorkloadView>();
  const annotationWarnings: string[] = [];
  for (const we of entries) {
    const spec = we.resource.spec;
    const labels = { ...spec.labels };
    const serviceAccount = spec.serviceAccount || "default";
    const mtlsOf = (port: number, bound: boolean): PortMtlsView => {
      const e = effectivePeerAuthentication({
        namespace: we.namespace,
        labels,
        port,
        portBoundToService: bound,
        policies: peerAuthentications,
        rootNamespace,
      });
      return { port: bound ? port : 0, mode: e.mode, ...decision(e.decidedBy) };
    };
    const bound = [...(boundPorts.get(keyOf(we)) ?? [])].sort((a, b) => a - b);
    workloads.set(keyOf(we), {
      key: keyOf(we),
      name: we.name,
      namespace: we.namespace,
      serviceAccount,
      trustDomain,
      identity: formatSpiffeId({ trustDomain, namespace: we.namespace, serviceAccount }),
      addresses: spec.address ? [spec.address] : [],
      labels,
      ports: { ...spec.ports },
      proxied: connected.has(keyOf(we)) || Object.entries(TLS_MODE_LABELS).some(([k, v]) => labels[k] === v),
      inboundMtls: bound.map((p) => mtlsOf(p, true)),
      // Port-level settings never apply to an unbound port, so any port number gives the default.
      defaultMtls: mtlsOf(1, false),
      network: spec.network ?? "",
      locality: spec.locality ?? "",
      weight: spec.weight ?? 0,
      proxyConfig: workloadProxyConfig(we, annotationWarnings),
    });
  }

  const inlineWithMtls = inlineMtls(peerAuthentications, rootNamespace);
  const services: ServiceView[] = serviceEntries.map((se): ServiceView => {
    const spec = se.resource.spec;
    const ports = (spec.ports ?? []).map((p) => ({
      name: p.name ?? "",
      number: p.number,
      targetPort: p.targetPort ?? p.number,
      protocol: serviceEntryPortProtocol(p),
    }));
    const endpoints: EndpointView[] = [];
    for (const we of selectedEntries(se)) {
      const w = workloads.get(keyOf(we))!;
      for (const address of w.addresses) {
        endpoints.push(withWorkloadMtls(w, {
          workload: w.key,
          address,
          ports: portMap(spec.ports, we.resource.spec),
          proxied: w.proxied,
          identity: w.proxied ? w.identity : "",
          labels: w.labels,
        }));
      }
    }
    for (const inline of spec.endpoints ?? []) {
      const labels = inline.labels ?? {};
      const proxied = Object.entries(TLS_MODE_LABELS).some(([k, v]) => labels[k] === v);
      const sa = inline.serviceAccount || "default";
      endpoints.push(inlineWithMtls(se.namespace, {
        workload: "",
        address: inline.address ?? "",
        ports: portMap(spec.ports, inline),
        proxied,
        identity: proxied ? formatSpiffeId({ trustDomain, namespace: se.namespace, serviceAccount: sa }) : "",
        labels,
      }));
    }
    return {
      key: keyOf(se),
      name: se.name,
      namespace: se.namespace,
      hosts: [...spec.hosts],
      addresses: [...spec.addresses ?? []],
      ports,
      endpoints,
      location: spec.location ?? "MESH_EXTERNAL",
      resolution: spec.resolution ?? "NONE",
    };
  }).concat(registryServiceViews(options.registry, workloads));

  const credentials = new Map<string, TlsCredential>();
  for (const r of byKind("Secret")) {
    const parsed = parseTlsSecret(r.resource);
    if (parsed.credential) credentials.set(keyOf(r), parsed.credential);
  }
  const named = <S>(r: { namespace: string; name: string; resource: { spec: S } }): NamedSpec<S> => ({
    namespace: r.namespace,
    name: r.name,
    spec: r.resource.spec,
  });
  const gateways = byKind("Gateway").map(named);
  const virtualServices = byKind("VirtualService").map(named);
  const scopeGatewayToNamespace = options.scopeGatewayToNamespace ?? false;
  const gatewayRoutes = new Map<string, RouteConfiguration[]>();
  const gatewayWarnings: string[] = [...annotationWarnings];
  for (const w of workloads.values()) {
    if (gatewaysSelecting(gateways, w, { scopeToNamespace: scopeGatewayToNamespace }).length === 0) continue;
    gatewayRoutes.set(
      w.key,
      gatewayRoutesOf(
        w,
        { gateways, virtualServices, services, credentials, scopeGatewayToNamespace },
        (m) => gatewayWarnings.push(m),
      ),
    );
  }

  const selecting = <S>(list: { namespace: string; name: string; resource: { spec: S } }[]) =>
    list.map((r): SelectingPolicyView<S> => ({
      key: keyOf(r),
      name: r.name,
      namespace: r.namespace,
      metadata: { namespace: r.namespace, name: r.name },
      spec: r.resource.spec,
    }));

  const authorizationPolicies = selecting(byKind("AuthorizationPolicy"));
  return deepFreeze({
    version: options.version,
    builtAt: Date.now(),
    rootNamespace,
    trustDomain,
    workloads: new FrozenMap(workloads),
    services,
    authorizationPolicies,
    authorizationWarnings: tcpAuthorizationWarnings({
      services,
      workloads,
      policies: authorizationPolicies,
      rootNamespace,
    }),
    requestAuthentications: selecting(byKind("RequestAuthentication")),
    gateways,
    virtualServices,
    scopeGatewayToNamespace,
    jwks: new FrozenMap(options.jwks ?? []),
    jwksFetchMode: options.jwksFetchMode ?? "meshd",
    jwksRefreshIntervalMs: options.jwksRefreshIntervalMs ?? 20 * 60_000,
    credentials: new FrozenMap(credentials),
    gatewayRoutes: new FrozenMap(gatewayRoutes),
    gatewayWarnings,
    // A deep copy: shared's defaults are frozen only at the top, and deepFreeze stops at a frozen object.
    proxySettings: structuredClone(options.proxySettings ?? DEFAULT_PROXY_SETTINGS),
    ...(options.registry ? { registry: options.registry.debug } : {}),
  });
}

/**
 * The route configurations of a gateway workload (shared's gatewayRouteConfigurations): bind ports
 * from the targetPorts of the services that select it, destination ports from single-port services,
 * credentials from the Secrets of the workload's own namespace (as Istio). Skipped servers go to `warn`.
 */
function gatewayRoutesOf(
  workload: WorkloadView,
  config: {
    gateways: readonly NamedSpec<GatewaySpec>[];
    virtualServices: readonly NamedSpec<VirtualServiceSpec>[];
    services: readonly ServiceView[];
    credentials: ReadonlyMap<string, TlsCredential>;
    scopeGatewayToNamespace: boolean;
  },
  warn: (message: string) => void,
): RouteConfiguration[] {
  return gatewayRouteConfigurations(workload, config, {
    scopeToNamespace: config.scopeGatewayToNamespace,
    targetPortOf: (port) => {
      for (const s of config.services) {
        for (const e of s.endpoints) {
          if (e.workload === workload.key && e.ports[port] !== undefined) return e.ports[port];
        }
      }
      return undefined;
    },
    defaultPortOf: (host) => {
      const s = config.services.find((s) => s.hosts.includes(host));
      return s?.ports.length === 1 ? s.ports[0].number : undefined;
    },
    credentialOf: (name) => {
      const c = config.credentials.get(`${workload.namespace}/${name}`);
      return c && { certificate: c.certChainPem !== "", ca: c.caPem !== "" };
    },
    onSkip: (s) =>
      warn(
        `Gateway ${s.gateway} spec.servers[${s.server}] (port ${s.port}) is not served on gateway ` +
          `${workload.key}: ${s.reason}`,
      ),
    onSkipRoute: (s) =>
      warn(`VirtualService ${s.virtualService} spec.tls[${s.rule}] on gateway ${workload.key}: ${s.reason}`),
  });
}

/**
 * A WorkloadEntry's `proxy.istio.io/config` overrides. An invalid annotation is a warning and no
 * override (the mesh-wide settings apply), so it never removes the workload.
 */
function workloadProxyConfig(we: OfKind<"WorkloadEntry">, warnings: string[]): ProxyConfigOverrides {
  try {
    const r = proxyConfigOverrides(we.resource.metadata.annotations, `WorkloadEntry ${keyOf(we)}`);
    warnings.push(...r.warnings);
    return r.overrides;
  } catch (e) {
    warnings.push(`${e instanceof Error ? e.message : String(e)}; the mesh-wide settings apply`);
    return {};
  }
}

function portMap(
  ports: readonly ServicePortSpec[] | undefined,
  endpoint: WorkloadEntrySpec,
): Record<number, number> {
  const out: Record<number, number> = {};
  for (const p of ports ?? []) {
    out[p.number] = endpointPort(p, endpoint.ports);
  }
  return out;
}

function decision(d: PeerAuthenticationDecision): { policy: string; scope: string } {
  return d.scope === "default"
    ? { policy: "", scope: "default" }
    : { policy: `${d.policy.namespace}/${d.policy.name}`, scope: d.scope };
}
