/**
 * The push context: an immutable snapshot of everything proxies are told, built from the validated
 * config and the set of connected proxies, as istiod's PushContext. Built whole when the config, the
 * registry or the key sets change; a connect or disconnect alone derives the next one from the last
 * (incremental.ts). Generators only read it. Its shapes are views.ts. Sources: the policies seed
 * ("What the service does", "Scope and precedence rules"), the meshd issue ("Service registry", "Push
 * context and xDS").
 *
 * @module
 */
import {
  DEFAULT_PROXY_SETTINGS,
  type ProxyConfigOverrides,
  proxyConfigOverrides,
} from "../../shared/proxy_settings/mod.ts";
import {
  effectivePeerAuthentication,
  endpointPort,
  formatSpiffeId,
  gatewaysSelecting,
  type NamedSpec,
  parseTlsSecret,
  type PeerAuthenticationDecision,
  type RouteConfiguration,
  type ServicePortSpec,
  serviceSelectsWorkload,
  type TlsCredential,
  type WorkloadEntrySpec,
} from "../../shared/mod.ts";
import { serviceEntryPortProtocol } from "../../shared/protocol/mod.ts";
import { deepFreeze, FrozenMap } from "./frozen.ts";
import { tcpAuthorizationWarnings } from "./authz_warnings.ts";
import { inlineMtls, withWorkloadMtls } from "./auto_mtls.ts";
import { gatewayRoutesOf } from "./gateway_routes.ts";
import { registryBoundPorts, registryServiceViews } from "./registry_services.ts";
import type {
  ConfigResource,
  EndpointView,
  OfKind,
  PortMtlsView,
  PushContext,
  PushContextOptions,
  SelectingPolicyView,
  ServiceView,
  WorkloadView,
} from "./views.ts";

export type {
  ConfigResource,
  EndpointView,
  OfKind,
  PortMtlsView,
  PushContext,
  PushContextOptions,
  SelectingPolicyView,
  ServicePortView,
  ServiceView,
  WorkloadView,
} from "./views.ts";

const TLS_MODE_LABELS: Record<string, string> = {
  "security.mesh.io/tlsMode": "mesh",
  "security.istio.io/tlsMode": "istio",
};

/**
 * Whether labels make a workload proxied whether or not its proxy is connected: security.mesh.io/tlsMode:
 * mesh (Istio's security.istio.io/tlsMode: istio).
 */
export function proxiedByLabels(labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(TLS_MODE_LABELS).some(([k, v]) => labels[k] === v);
}

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
    const mtlsOf = (port: number, bound: boolean): PortMtlsView =>
      portMtls({ namespace: we.namespace, labels }, port, bound, peerAuthentications, rootNamespace);
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
      proxied: connected.has(keyOf(we)) || proxiedByLabels(labels),
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
      const proxied = proxiedByLabels(labels);
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

  const authorizationPolicies = selectingViews(byKind("AuthorizationPolicy"));
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
    requestAuthentications: selectingViews(byKind("RequestAuthentication")),
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
 * The effective inbound mutual TLS of one port of a workload (shared's effectivePeerAuthentication):
 * `bound` when a service targets the port (only then do port-level settings apply); an unbound port
 * is reported as port 0, the workload's default.
 */
export function portMtls(
  workload: { namespace: string; labels: Readonly<Record<string, string>> },
  port: number,
  bound: boolean,
  policies: readonly OfKind<"PeerAuthentication">["resource"][],
  rootNamespace: string,
): PortMtlsView {
  const e = effectivePeerAuthentication({
    namespace: workload.namespace,
    labels: workload.labels,
    port,
    portBoundToService: bound,
    policies,
    rootNamespace,
  });
  return { port: bound ? port : 0, mode: e.mode, ...decision(e.decidedBy) };
}

/** The views of AuthorizationPolicies or RequestAuthentications, in the order of `list`. */
export function selectingViews<S>(
  list: readonly { namespace: string; name: string; resource: { spec: S } }[],
): SelectingPolicyView<S>[] {
  return list.map((r): SelectingPolicyView<S> => ({
    key: keyOf(r),
    name: r.name,
    namespace: r.namespace,
    metadata: { namespace: r.namespace, name: r.name },
    spec: r.resource.spec,
  }));
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
