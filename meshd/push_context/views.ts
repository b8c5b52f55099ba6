/**
 * The shapes of the push context: the resources it is built from ({@link ConfigResource}) and the
 * views proxies and debug pages read (workloads, services, endpoints, policies). Built by
 * push_context.ts (whole) and incremental.ts (a connect or disconnect); sources as there.
 *
 * @module
 */
import type { ProxyConfigOverrides, ProxySettings } from "../../shared/proxy_settings/mod.ts";
import type {
  AuthorizationPolicySpec,
  GatewaySpec,
  JwksFetchMode,
  NamedSpec,
  ObjectMeta,
  RequestAuthenticationSpec,
  RouteConfiguration,
  SecretResource,
  SpecByKind,
  SpecKind,
  TlsCredential,
  VirtualServiceSpec,
} from "../../shared/mod.ts";
import type { RegistrySnapshot } from "./registry_services.ts";

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
