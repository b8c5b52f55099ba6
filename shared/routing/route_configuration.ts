/**
 * The shapes of gateway routing: the Gateways and VirtualServices read from config, the gateway
 * workload, and the route configurations built from them (virtual hosts, routes, destinations,
 * server TLS, skipped servers) as meshd sends them and the proxy selects from them.
 *
 * @module
 */

/** A Gateway or VirtualService as read from config: where it is and its spec. */
export interface NamedSpec<S> {
  /** The resource's namespace. */
  namespace: string;
  /** The resource's name. */
  name: string;
  /** Its spec, as validated. */
  spec: S;
}

/** The gateway workload: its namespace and labels (what a Gateway's selector is matched against). */
export interface GatewayWorkload {
  /** The workload's namespace. */
  namespace: string;
  /** The workload's labels. */
  labels: Readonly<Record<string, string>>;
}

/** One URI match of a route (mesh.v1.UriMatch); exactly one of exact, prefix, regex is set. */
export interface UriMatch {
  /** The whole path, or empty. */
  exact: string;
  /** A path prefix, or empty. */
  prefix: string;
  /** RE2 syntax, matched against the whole path. */
  regex: string;
  /** Compare without case (`ignoreUriCase`). */
  ignoreCase: boolean;
}

/** A weighted destination (mesh.v1.RouteDestination): a fully qualified service host and port. */
export interface GatewayRouteDestination {
  /** Fully qualified service host, e.g. `httpbin.foo.svc.cluster.local`. */
  host: string;
  /** Service port; 0 when the VirtualService named none and the service's port is not known. */
  port: number;
  /** Relative weight (VirtualService `route[].weight`); 100 for a single destination. */
  weight: number;
}

/** A route (mesh.v1.Route). */
export interface GatewayRoute {
  /** `<namespace>/<virtual service>.<http rule index>`. */
  name: string;
  /** Any one must match; empty matches every request. */
  matches: UriMatch[];
  /** Where matching requests go. */
  destinations: GatewayRouteDestination[];
  /**
   * The route timeout (VirtualService `http[].timeout`), ms; 0 or absent: none (Istio's default). The
   * proxy applies it to HTTP/2 streams (and, with `max_grpc_timeout` the same, caps `grpc-timeout`).
   */
  timeoutMs?: number;
}

/** A virtual host (mesh.v1.VirtualHost). */
export interface VirtualHost {
  /** `<domain>:<port>`. */
  name: string;
  /** Lower-case host names or wildcards (`*.example.com`, `*`). */
  domains: string[];
  /** First match wins. */
  routes: GatewayRoute[];
  /** The server has `tls.httpsRedirect`: every request gets 301 to https. */
  httpsRedirect?: boolean;
}

/** How an HTTPS or TLS server handles TLS (mesh.v1.ServerTls). */
export interface ServerTls {
  /**
   * SIMPLE: server certificate; MUTUAL: a client certificate verified against the CA is required;
   * PASSTHROUGH: not terminated, the connection goes by SNI to a {@link TlsRoute}'s destination.
   */
  mode: "SIMPLE" | "MUTUAL" | "PASSTHROUGH";
  /**
   * The SNI names the server answers, lower case (`*.x`, `*`): SIMPLE and MUTUAL, the server's hosts
   * without namespace; PASSTHROUGH, the SNI hosts of its routes (within the server's hosts).
   */
  sniHosts: string[];
  /** `kubernetes://<secret>` (see {@link credentialResourceName}); empty for PASSTHROUGH. */
  credentialName: string;
  /** MUTUAL: `kubernetes://<secret>-cacert`, or the caCertCredentialName's; empty for SIMPLE. */
  caCredentialName: string;
  /** `TLSV1_2`, ...; empty for the default (TLS 1.2). */
  minProtocolVersion: string;
  /** `TLSV1_3`, ...; empty for the default (TLS 1.3). */
  maxProtocolVersion: string;
  /** MUTUAL: SANs a client certificate must carry one of; empty accepts any. */
  subjectAltNames: string[];
}

/**
 * A TLS route of a PASSTHROUGH server (mesh.v1.TlsRoute): a VirtualService `tls` rule whose matches
 * hold at this server, with the SNI names it takes there.
 */
export interface TlsRoute {
  /** `<namespace>/<virtual service>.tls.<tls rule index>`. */
  name: string;
  /** Lower-case SNI names or wildcards: each a match's `sniHosts` entry within the server's hosts. */
  sniHosts: string[];
  /** Where matching connections go; never empty. */
  destinations: GatewayRouteDestination[];
}

/** A Gateway server that is not served, and why (Istio skips such servers and logs them). */
export interface SkippedServer {
  /** `<namespace>/<name>` of the Gateway. */
  gateway: string;
  /** Index in `spec.servers`. */
  server: number;
  /** The server's port number. */
  port: number;
  /** Why, as a sentence fragment. */
  reason: string;
}

/** What a credential (a Secret of the gateway workload's namespace) holds. */
export interface CredentialContents {
  /** A certificate and key. */
  certificate: boolean;
  /** A client CA bundle. */
  ca: boolean;
}

/** The route configuration of one gateway port or HTTPS server (mesh.v1.RouteConfiguration). */
export interface RouteConfiguration {
  /**
   * `http.<port>`, `https.<port>.<port name>.<gateway>.<namespace>` (terminated), or
   * `tls.<port>.<port name>.<gateway>.<namespace>` (PASSTHROUGH); at a sidecar,
   * `mesh.tls.<port>.<service key>` and `mesh.tcp.<port>.<service key>` (VirtualService `tls` and
   * `tcp` rules bound to mesh, mesh_tls_routes.ts and mesh_tcp_routes.ts).
   */
  name: string;
  /** The Gateway server port. */
  port: number;
  /** Where the gateway proxy listens: the service targetPort for `port`, else `port`. */
  bindPort: number;
  /** `<namespace>/<name>` of the Gateways with an HTTP server on this port. */
  gateways: string[];
  /** Exact domains first, then wildcard suffixes (longest first), then "*". */
  virtualHosts: VirtualHost[];
  /** HTTPS and TLS servers: TLS termination or passthrough; absent for plain-text HTTP. */
  tls?: ServerTls;
  /** PASSTHROUGH servers: routes by SNI (first the most specific name, as Envoy's filter chains). */
  tlsRoutes?: TlsRoute[];
}

/** The outcome of selectRoute (route_selection.ts). */
export type RouteSelection =
  | { ok: true; virtualHost: VirtualHost; route: GatewayRoute }
  | { ok: false; status: 404; reason: string };

/** Settings of gatewayRouteConfigurations (gateway_routes.ts). */
export interface GatewayRouteOptions {
  /** Cluster domain for short host names (`httpbin` → `httpbin.<ns>.svc.<domain>`). Default cluster.local. */
  domainSuffix?: string;
  /** Gateways select only workloads of their own namespace (DISCO_SCOPE_GATEWAY_TO_NAMESPACE). Default false. */
  scopeToNamespace?: boolean;
  /** The targetPort of the gateway workload's service port `port`, if a service selects it. */
  targetPortOf?: (port: number) => number | undefined;
  /** The port of a destination service that has exactly one port, for destinations that name none. */
  defaultPortOf?: (host: string) => number | undefined;
  /**
   * What the Secret of this name in the workload's namespace holds, or undefined when there is none
   * (a gateway may only use its own namespace's secrets, as Istio). Default: every secret exists.
   */
  credentialOf?: (secretName: string) => CredentialContents | undefined;
  /** Told about every server that is not served. */
  onSkip?: (skipped: SkippedServer) => void;
  /** Told about every VirtualService `tls` rule not used at a server, and why. */
  onSkipRoute?: (skipped: SkippedRoute) => void;
}

/** A VirtualService `tls` rule that a PASSTHROUGH server does not use, and why. */
export interface SkippedRoute {
  /** `<namespace>/<name>` of the VirtualService. */
  virtualService: string;
  /** Index in `spec.tls`. */
  rule: number;
  /** Why, as a sentence fragment. */
  reason: string;
}
