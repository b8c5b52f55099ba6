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
  effectivePeerAuthentication,
  endpointPort,
  formatSpiffeId,
  gatewayRouteConfigurations,
  type GatewaySpec,
  gatewaysSelecting,
  type JwksFetchMode,
  type NamedSpec,
  parseTlsSecret,
  type PeerAuthenticationDecision,
  type PeerAuthenticationPolicy,
  type RouteConfiguration,
  type SelectingService,
  type ServicePortSpec,
  serviceSelectsWorkload,
  type TlsCredential,
  type VirtualServiceSpec,
} from "../../shared/mod.ts";

/** A resource of the config snapshot, as the config store hands it over. */
export interface ConfigResource {
  kind: string;
  namespace: string;
  name: string;
  resource: { metadata: Record<string, unknown>; spec?: unknown };
}

/** The effective inbound mutual TLS of one port, and what decided it. */
export interface PortMtlsView {
  /** Container port; 0 for the default of unbound ports. */
  port: number;
  mode: "DISABLE" | "PERMISSIVE" | "STRICT";
  /** `<namespace>/<name>` of the deciding PeerAuthentication, or empty. */
  policy: string;
  scope: string;
}

/** A workload as proxies and debug endpoints see it. */
export interface WorkloadView {
  /** `<namespace>/<name>`. */
  key: string;
  name: string;
  namespace: string;
  serviceAccount: string;
  trustDomain: string;
  /** spiffe://<trust domain>/ns/<namespace>/sa/<service account>. */
  identity: string;
  addresses: string[];
  labels: Record<string, string>;
  ports: Record<string, number>;
  /** Connected proxy, or the label security.mesh.io/tlsMode: mesh (Istio's security.istio.io/tlsMode: istio). */
  proxied: boolean;
  /** Ports bound to a service, with their effective mode. */
  inboundMtls: PortMtlsView[];
  /** Effective mode of every other port. */
  defaultMtls: PortMtlsView;
  network: string;
  locality: string;
  weight: number;
  /**
   * The workload's `proxy.istio.io/config` annotation (gatewayTopology.numTrustedProxies), over the
   * mesh config's settings; absent or empty: none.
   */
  proxyConfig?: ProxyConfigOverrides;
}

/** A service endpoint. */
export interface EndpointView {
  /** `<namespace>/<name>` of the workload, or empty for an inline endpoint. */
  workload: string;
  address: string;
  /** Service port number to endpoint port. */
  ports: Record<number, number>;
  proxied: boolean;
  /** SPIFFE ID to verify when proxied (secure naming), else empty. */
  identity: string;
  labels: Record<string, string>;
}

/** A service from a ServiceEntry. */
export interface ServiceView {
  /** `<namespace>/<name>` of the ServiceEntry. */
  key: string;
  name: string;
  namespace: string;
  hosts: string[];
  addresses: string[];
  ports: { name: string; number: number; targetPort: number; protocol: string }[];
  endpoints: EndpointView[];
  location: string;
  resolution: string;
}

/** A policy that selects workloads (AuthorizationPolicy or RequestAuthentication), as written. */
export interface SelectingPolicyView {
  /** `<namespace>/<name>`. */
  key: string;
  name: string;
  namespace: string;
  metadata: { namespace: string; name: string };
  spec: Record<string, unknown>;
}

/** The immutable push context. */
export interface PushContext {
  /** Changes on every build: `<revision>` of the config plus a build counter. */
  version: string;
  /** When it was built, ms since the epoch. */
  builtAt: number;
  rootNamespace: string;
  trustDomain: string;
  workloads: ReadonlyMap<string, WorkloadView>;
  services: readonly ServiceView[];
  authorizationPolicies: readonly SelectingPolicyView[];
  requestAuthentications: readonly SelectingPolicyView[];
  /** Gateways and VirtualServices, for the route configurations of gateway proxies. */
  gateways: readonly NamedSpec<GatewaySpec>[];
  virtualServices: readonly NamedSpec<VirtualServiceSpec>[];
  /** DISCO_SCOPE_GATEWAY_TO_NAMESPACE. */
  scopeGatewayToNamespace: boolean;
  /** Fetched key sets by source (a jwksUri, or `oidc:<issuer>`): see meshd/jwks. */
  jwks: ReadonlyMap<string, string>;
  /** DISCO_JWT_ENABLE_REMOTE_JWKS: who fetches each rule's keys (shared's jwksFetcherOf). */
  jwksFetchMode: JwksFetchMode;
  /** DISCO_JWT_PUB_KEY_REFRESH_INTERVAL, ms: also the refresh interval of proxies that fetch. */
  jwksRefreshIntervalMs: number;
  /** Gateway TLS credentials from the config's Secrets, by `<namespace>/<name>`. */
  credentials: ReadonlyMap<string, TlsCredential>;
  /** The route configurations of each workload that a Gateway selects, by workload key. */
  gatewayRoutes: ReadonlyMap<string, readonly RouteConfiguration[]>;
  /** Gateway servers that are not served, one sentence each (meshd logs them as warnings). */
  gatewayWarnings: readonly string[];
  /** The mesh config's data-path settings, sent to every proxy in its Workload. */
  proxySettings: ProxySettings;
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
}

const TLS_MODE_LABELS: Record<string, string> = {
  "security.mesh.io/tlsMode": "mesh",
  "security.istio.io/tlsMode": "istio",
};

type Spec = Record<string, unknown>;
const asSpec = (r: ConfigResource): Spec => (r.resource.spec ?? {}) as Spec;
const keyOf = (r: ConfigResource) => `${r.namespace}/${r.name}`;

/**
 * Builds the push context. Pure: the same inputs give an equal context.
 *
 * @param resources every valid resource of the config snapshot
 */
export function buildPushContext(
  resources: readonly ConfigResource[],
  options: PushContextOptions,
): PushContext {
  const rootNamespace = options.rootNamespace ?? "mesh-system";
  const trustDomain = options.trustDomain ?? "cluster.local";
  const connected = options.connected ?? new Set<string>();
  const byKind = (kind: string) => resources.filter((r) => r.kind === kind);
  const peerAuthentications = byKind("PeerAuthentication").map((r) => r.resource as PeerAuthenticationPolicy);
  const entries = byKind("WorkloadEntry");
  const serviceEntries = byKind("ServiceEntry");

  // A ServiceEntry selects WorkloadEntries of its own namespace only, so indexing by namespace keeps
  // the build linear in practice instead of services × workloads.
  const entriesByNamespace = new Map<string, ConfigResource[]>();
  for (const we of entries) {
    const list = entriesByNamespace.get(we.namespace) ?? [];
    list.push(we);
    entriesByNamespace.set(we.namespace, list);
  }
  const selectedEntries = (se: ConfigResource): ConfigResource[] => {
    const service = {
      metadata: { name: se.name, namespace: se.namespace },
      spec: asSpec(se),
    } as SelectingService;
    return (entriesByNamespace.get(se.namespace) ?? []).filter((we) =>
      serviceSelectsWorkload(service, { metadata: { namespace: we.namespace }, spec: asSpec(we) })
    );
  };

  // Ports of a workload that a service targets: only those get PeerAuthentication's portLevelMtls.
  const boundPorts = new Map<string, Set<number>>();
  for (const se of serviceEntries) {
    const ports = (asSpec(se).ports ?? []) as ServicePortSpec[];
    for (const we of selectedEntries(se)) {
      const set = boundPorts.get(keyOf(we)) ?? new Set<number>();
      for (const p of ports) set.add(endpointPort(p, asSpec(we).ports as Record<string, number> | undefined));
      boundPorts.set(keyOf(we), set);
    }
  }

  const workloads = new Map<string, WorkloadView>();
  const annotationWarnings: string[] = [];
  for (const we of entries) {
    const spec = asSpec(we);
    const labels = { ...(spec.labels ?? {}) as Record<string, string> };
    const serviceAccount = (spec.serviceAccount as string | undefined) || "default";
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
      addresses: spec.address ? [spec.address as string] : [],
      labels,
      ports: { ...(spec.ports ?? {}) as Record<string, number> },
      proxied: connected.has(keyOf(we)) || Object.entries(TLS_MODE_LABELS).some(([k, v]) => labels[k] === v),
      inboundMtls: bound.map((p) => mtlsOf(p, true)),
      // Port-level settings never apply to an unbound port, so any port number gives the default.
      defaultMtls: mtlsOf(1, false),
      network: (spec.network as string | undefined) ?? "",
      locality: (spec.locality as string | undefined) ?? "",
      weight: (spec.weight as number | undefined) ?? 0,
      proxyConfig: workloadProxyConfig(we, annotationWarnings),
    });
  }

  const services: ServiceView[] = serviceEntries.map((se) => {
    const spec = asSpec(se);
    const ports = ((spec.ports ?? []) as ServicePortSpec[]).map((p) => ({
      name: p.name ?? "",
      number: p.number,
      targetPort: p.targetPort ?? p.number,
      protocol: (p.protocol ?? "TCP").toUpperCase(),
    }));
    const endpoints: EndpointView[] = [];
    for (const we of selectedEntries(se)) {
      const w = workloads.get(keyOf(we))!;
      for (const address of w.addresses) {
        endpoints.push({
          workload: w.key,
          address,
          ports: portMap(spec.ports as ServicePortSpec[] | undefined, asSpec(we)),
          proxied: w.proxied,
          identity: w.proxied ? w.identity : "",
          labels: w.labels,
        });
      }
    }
    for (const inline of (spec.endpoints ?? []) as Spec[]) {
      const labels = (inline.labels ?? {}) as Record<string, string>;
      const proxied = Object.entries(TLS_MODE_LABELS).some(([k, v]) => labels[k] === v);
      const sa = (inline.serviceAccount as string | undefined) || "default";
      endpoints.push({
        workload: "",
        address: inline.address as string,
        ports: portMap(spec.ports as ServicePortSpec[] | undefined, inline),
        proxied,
        identity: proxied ? formatSpiffeId({ trustDomain, namespace: se.namespace, serviceAccount: sa }) : "",
        labels,
      });
    }
    return {
      key: keyOf(se),
      name: se.name,
      namespace: se.namespace,
      hosts: [...(spec.hosts ?? []) as string[]],
      addresses: [...(spec.addresses ?? []) as string[]],
      ports,
      endpoints,
      location: (spec.location as string | undefined) ?? "MESH_EXTERNAL",
      resolution: (spec.resolution as string | undefined) ?? "NONE",
    };
  });

  const credentials = new Map<string, TlsCredential>();
  for (const r of byKind("Secret")) {
    const parsed = parseTlsSecret(r.resource);
    if (parsed.credential) credentials.set(keyOf(r), parsed.credential);
  }
  const gateways = byKind("Gateway").map((r) => ({
    namespace: r.namespace,
    name: r.name,
    spec: asSpec(r) as GatewaySpec,
  }));
  const virtualServices = byKind("VirtualService").map((r) => ({
    namespace: r.namespace,
    name: r.name,
    spec: asSpec(r) as VirtualServiceSpec,
  }));
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

  const selecting = (kind: string): SelectingPolicyView[] =>
    byKind(kind).map((r) => ({
      key: keyOf(r),
      name: r.name,
      namespace: r.namespace,
      metadata: { namespace: r.namespace, name: r.name },
      spec: asSpec(r),
    }));

  return deepFreeze({
    version: options.version,
    builtAt: Date.now(),
    rootNamespace,
    trustDomain,
    workloads,
    services,
    authorizationPolicies: selecting("AuthorizationPolicy"),
    requestAuthentications: selecting("RequestAuthentication"),
    gateways,
    virtualServices,
    scopeGatewayToNamespace,
    jwks: new Map(options.jwks ?? []),
    jwksFetchMode: options.jwksFetchMode ?? "meshd",
    jwksRefreshIntervalMs: options.jwksRefreshIntervalMs ?? 20 * 60_000,
    credentials,
    gatewayRoutes,
    gatewayWarnings,
    proxySettings: { ...(options.proxySettings ?? DEFAULT_PROXY_SETTINGS) },
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
  });
}

/**
 * A WorkloadEntry's `proxy.istio.io/config` overrides. An invalid annotation is a warning and no
 * override (the mesh-wide settings apply), so it never removes the workload.
 */
function workloadProxyConfig(we: ConfigResource, warnings: string[]): ProxyConfigOverrides {
  const annotations = we.resource.metadata.annotations as Record<string, unknown> | undefined;
  try {
    const r = proxyConfigOverrides(annotations, `WorkloadEntry ${keyOf(we)}`);
    warnings.push(...r.warnings);
    return r.overrides;
  } catch (e) {
    warnings.push(`${(e as Error).message}; the mesh-wide settings apply`);
    return {};
  }
}

function portMap(ports: ServicePortSpec[] | undefined, endpoint: Spec): Record<number, number> {
  const out: Record<number, number> = {};
  for (const p of ports ?? []) {
    out[p.number] = endpointPort(p, endpoint.ports as Record<string, number> | undefined);
  }
  return out;
}

function decision(d: PeerAuthenticationDecision): { policy: string; scope: string } {
  return d.scope === "default"
    ? { policy: "", scope: "default" }
    : { policy: `${d.policy.namespace}/${d.policy.name}`, scope: d.scope };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    if (value instanceof Map) { for (const v of value.values()) deepFreeze(v); }
    else for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
