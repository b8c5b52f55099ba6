/**
 * Ingress gateway routing, as Istio builds a gateway's listeners and routes: which Gateways select a
 * gateway workload, which VirtualServices bind to them, the route configuration of each plain-text
 * HTTP server port (Istio's RDS "http.<port>") and of each HTTPS server
 * ("https.<port>.<port name>.<gateway>.<namespace>", pilot/pkg/model/gateway.go gatewayRDSRouteName)
 * with its TLS settings and credential names (Istio's "Secure Gateways": SIMPLE and MUTUAL with
 * `credentialName`, `httpsRedirect`), and which route a request takes. meshd builds the route
 * configurations; the proxy in gateway mode selects routes; meshctl can explain both offline.
 *
 * Sources: the policies seed (RequestAuthentication at an ingress gateway), Istio's Gateway and
 * VirtualService references (istio.io/latest/docs/reference/config/networking/gateway,
 * .../virtual-service), Envoy's virtual host selection (exact domain, then the longest wildcard
 * suffix, then "*").
 *
 * Partial, on purpose (said in the README): HTTP and HTTPS servers only; TLS modes SIMPLE and MUTUAL
 * with `credentialName` only (PASSTHROUGH, ISTIO_MUTUAL, AUTO_PASSTHROUGH, OPTIONAL_MUTUAL, file
 * certificates and two `credentialNames` are skipped, each reported through `onSkip`); HTTP matches on `uri` (exact, prefix, regex, ignoreUriCase),
 * `port` and `gateways` only (a match with other conditions never matches, so that no request is
 * routed more widely than the rule says); routes with `route` destinations only (redirect,
 * directResponse, rewrite, delegate are skipped).
 *
 * @module
 */
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import { CA_SECRET_SUFFIX } from "../credentials/secret.ts";
import { labelsMatch } from "../policy/workload_selection.ts";

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

/** How an HTTPS server terminates TLS (mesh.v1.ServerTls). */
export interface ServerTls {
  /** SIMPLE: server certificate; MUTUAL: a client certificate verified against the CA is required. */
  mode: "SIMPLE" | "MUTUAL";
  /** The server's hosts without namespace, lower case: the SNI names it answers (`*.x`, `*`). */
  sniHosts: string[];
  /** `kubernetes://<secret>` (see {@link credentialResourceName}). */
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

/** The xDS (SDS) name of a gateway credential: `kubernetes://<secret name>`, as Istio. */
export function credentialResourceName(secretName: string): string {
  return `kubernetes://${secretName}`;
}

/** The credential resource names the route configurations use, sorted, without repeats. */
export function credentialNamesOf(configs: readonly RouteConfiguration[]): string[] {
  const names = new Set<string>();
  for (const rc of configs) {
    if (!rc.tls) continue;
    names.add(rc.tls.credentialName);
    if (rc.tls.caCredentialName) names.add(rc.tls.caCredentialName);
  }
  return [...names].sort();
}

/** The route configuration of one gateway port or HTTPS server (mesh.v1.RouteConfiguration). */
export interface RouteConfiguration {
  /** `http.<port>`, or `https.<port>.<port name>.<gateway>.<namespace>`. */
  name: string;
  /** The Gateway server port. */
  port: number;
  /** Where the gateway proxy listens: the service targetPort for `port`, else `port`. */
  bindPort: number;
  /** `<namespace>/<name>` of the Gateways with an HTTP server on this port. */
  gateways: string[];
  /** Exact domains first, then wildcard suffixes (longest first), then "*". */
  virtualHosts: VirtualHost[];
  /** HTTPS servers: TLS termination; absent for plain-text HTTP. */
  tls?: ServerTls;
}

/** Settings of {@link gatewayRouteConfigurations}. */
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
}

/**
 * The Gateways whose `selector` matches the workload's labels: in every namespace, or only the
 * workload's own with `scopeToNamespace`. A Gateway without selector selects nothing (Istio's
 * gateways always name their pods).
 */
export function gatewaysSelecting(
  gateways: readonly NamedSpec<GatewaySpec>[],
  workload: GatewayWorkload,
  options: { scopeToNamespace?: boolean } = {},
): NamedSpec<GatewaySpec>[] {
  return gateways.filter((g) => {
    if (options.scopeToNamespace && g.namespace !== workload.namespace) return false;
    const selector = g.spec.selector ?? {};
    return Object.keys(selector).length > 0 && labelsMatch(selector, workload.labels);
  });
}

/**
 * The route configurations of a gateway workload: one per plain-text HTTP server port and one per
 * HTTPS server (SIMPLE or MUTUAL with a credential) of the Gateways that select it, with the
 * VirtualServices bound to those Gateways (`spec.gateways`, `<name>` meaning the VirtualService's
 * namespace) whose hosts the server exposes to their namespace. Ordered by port, then name.
 * VirtualServices merge per domain in namespace/name order (Istio uses creation time, which files
 * do not have). A server that cannot be served is skipped and reported to `onSkip`; the rest of the
 * gateway is unaffected.
 */
export function gatewayRouteConfigurations(
  workload: GatewayWorkload,
  config: {
    gateways: readonly NamedSpec<GatewaySpec>[];
    virtualServices: readonly NamedSpec<VirtualServiceSpec>[];
  },
  options: GatewayRouteOptions = {},
): RouteConfiguration[] {
  const suffix = options.domainSuffix ?? "cluster.local";
  const selected = gatewaysSelecting(config.gateways, workload, options);
  const services = [...config.virtualServices].sort((a, b) => compareKeys(a, b));
  const entries = new Map<string, RouteEntry>();
  const tlsServers: { gw: NamedSpec<GatewaySpec>; index: number; server: GatewayServer; tls: ServerTls }[] =
    [];
  for (const gw of selected) {
    const gwKey = `${gw.namespace}/${gw.name}`;
    for (const [index, server] of (gw.spec.servers ?? []).entries()) {
      const port = server.port.number;
      if (port === undefined) continue;
      const skip = (reason: string) => options.onSkip?.({ gateway: gwKey, server: index, port, reason });
      const protocol = (server.port.protocol ?? "").toUpperCase();
      if (protocol === "HTTPS") {
        const tls = serverTls(server, options);
        if (typeof tls === "string") skip(tls);
        else tlsServers.push({ gw, index, server, tls });
        continue;
      }
      if (protocol !== "HTTP") {
        skip(`protocol ${server.port.protocol} is not supported (HTTP and HTTPS only)`);
        continue;
      }
      const name = `http.${port}`;
      let entry = entries.get(name);
      if (!entry) {
        entries.set(name, entry = { port, gateways: new Set(), hosts: new Map(), redirect: new Set() });
      }
      addServer(entry, gw, server, services, suffix, options);
    }
  }
  for (const { gw, index, server, tls } of tlsServers) {
    const port = server.port.number;
    if (entries.has(`http.${port}`)) {
      options.onSkip?.({
        gateway: `${gw.namespace}/${gw.name}`,
        server: index,
        port,
        reason: `port ${port} also has plain-text HTTP servers; one port cannot serve both`,
      });
      continue;
    }
    // Istio's gatewayRDSRouteName; port names are unique within a Gateway, so each server has its own.
    const name = `https.${port}.${server.port.name}.${gw.name}.${gw.namespace}`;
    const entry: RouteEntry = { port, gateways: new Set(), hosts: new Map(), redirect: new Set(), tls };
    addServer(entry, gw, server, services, suffix, options);
    entries.set(name, entry);
  }
  return [...entries.entries()]
    .sort(([an, a], [bn, b]) => a.port - b.port || (an < bn ? -1 : an > bn ? 1 : 0))
    .map(([name, e]) => ({
      name,
      port: e.port,
      bindPort: options.targetPortOf?.(e.port) ?? e.port,
      gateways: [...e.gateways].sort(),
      virtualHosts: [...e.hosts.entries()]
        .sort(([a], [b]) => domainRank(a) - domainRank(b) || b.length - a.length || (a < b ? -1 : 1))
        .map(([domain, routes]) => ({
          name: `${domain}:${e.port}`,
          domains: [domain],
          routes,
          ...(e.redirect.has(domain) ? { httpsRedirect: true } : {}),
        })),
      ...(e.tls ? { tls: e.tls } : {}),
    }));
}

type GatewayServer = NonNullable<GatewaySpec["servers"]>[number];

/** One route configuration being built. */
interface RouteEntry {
  port: number;
  gateways: Set<string>;
  hosts: Map<string, GatewayRoute[]>;
  /** Domains of servers with httpsRedirect. */
  redirect: Set<string>;
  tls?: ServerTls;
}

/** Adds a server's virtual hosts: the bound VirtualServices' hosts that the server exposes. */
function addServer(
  entry: RouteEntry,
  gw: NamedSpec<GatewaySpec>,
  server: GatewayServer,
  services: readonly NamedSpec<VirtualServiceSpec>[],
  suffix: string,
  options: GatewayRouteOptions,
): void {
  const gwKey = `${gw.namespace}/${gw.name}`;
  entry.gateways.add(gwKey);
  const serverHosts = server.hosts.map((h) => parseServerHost(h, gw.namespace));
  if (server.tls?.httpsRedirect === true) {
    // Envoy's require_tls answers before routing, so the server's hosts need no bound VirtualService.
    for (const sh of serverHosts) {
      entry.redirect.add(sh.host);
      if (!entry.hosts.has(sh.host)) entry.hosts.set(sh.host, []);
    }
  }
  for (const vs of services) {
    if (!bindsTo(vs, gwKey)) continue;
    const routes = routesOf(vs, gwKey, entry.port, suffix, options);
    if (routes.length === 0) continue;
    for (const h of vs.spec.hosts ?? []) {
      const vsHost = qualify(h.toLowerCase(), vs.namespace, suffix);
      for (const sh of serverHosts) {
        if (sh.namespace !== "*" && sh.namespace !== vs.namespace) continue;
        const domain = intersect(vsHost, sh.host);
        if (domain === undefined) continue;
        const list = entry.hosts.get(domain) ?? [];
        for (const r of routes) if (!list.includes(r)) list.push(r);
        entry.hosts.set(domain, list);
        if (entry.redirect.has(sh.host)) entry.redirect.add(domain);
      }
    }
  }
}

/** The TLS settings of an HTTPS server, or why it is not served. */
function serverTls(server: GatewayServer, options: GatewayRouteOptions): ServerTls | string {
  const tls = server.tls;
  const mode = tls?.mode ?? "PASSTHROUGH";
  if (mode !== "SIMPLE" && mode !== "MUTUAL") {
    return `tls.mode ${mode} is not supported (SIMPLE and MUTUAL only)`;
  }
  const names = tls!.credentialNames ?? [];
  if (names.length > 1) return "two credentialNames are not supported; use one credentialName";
  const secret = tls!.credentialName ?? names[0];
  if (!secret) {
    return "certificates from files (serverCertificate, tlsCertificates) are not supported; use credentialName";
  }
  const found = options.credentialOf?.(secret) ??
    (options.credentialOf ? undefined : { certificate: true, ca: true });
  if (!found || !found.certificate) {
    return `credentialName ${secret}: no Secret ${secret} with a certificate and key in the gateway workload's namespace`;
  }
  let caCredentialName = "";
  if (mode === "MUTUAL") {
    const caSecret = tls!.caCertCredentialName ?? secret + CA_SECRET_SUFFIX;
    const ca = options.credentialOf?.(caSecret) ??
      (options.credentialOf ? undefined : { certificate: false, ca: true });
    const fallback = tls!.caCertCredentialName === undefined && found.ca;
    if (!ca?.ca && !fallback) {
      return `MUTUAL needs a client CA: no Secret ${caSecret} with ca.crt or cacert` +
        (tls!.caCertCredentialName === undefined ? `, and no ca.crt in ${secret}` : "");
    }
    caCredentialName = credentialResourceName(tls!.caCertCredentialName ?? secret + CA_SECRET_SUFFIX);
  }
  return {
    mode,
    sniHosts: [...new Set(server.hosts.map((h) => h.slice(h.indexOf("/") + 1).toLowerCase()))].sort(),
    credentialName: credentialResourceName(secret),
    caCredentialName,
    minProtocolVersion: tls!.minProtocolVersion ?? "",
    maxProtocolVersion: tls!.maxProtocolVersion ?? "",
    subjectAltNames: [...tls!.subjectAltNames ?? []],
  };
}

/** The outcome of {@link selectRoute}. */
export type RouteSelection =
  | { ok: true; virtualHost: VirtualHost; route: GatewayRoute }
  | { ok: false; status: 404; reason: string };

/**
 * The route a request takes: the virtual host of its Host header (port and case ignored; exact
 * domain, then the longest matching wildcard suffix, then "*"), then the first route with a
 * matching URI. The query string is not part of the path matched.
 */
export function selectRoute(config: RouteConfiguration, host: string, path: string): RouteSelection {
  const name = stripPort(host).toLowerCase();
  let vhost: VirtualHost | undefined;
  for (const v of config.virtualHosts) {
    if (v.domains.some((d) => domainMatches(name, d))) {
      vhost = v;
      break;
    }
  }
  if (vhost === undefined) {
    return { ok: false, status: 404, reason: `no virtual host for ${name} on gateway port ${config.port}` };
  }
  const q = path.indexOf("?");
  const p = q < 0 ? path : path.slice(0, q);
  for (const route of vhost.routes) {
    if (route.matches.length === 0 || route.matches.some((m) => uriMatches(m, p))) {
      return { ok: true, virtualHost: vhost, route };
    }
  }
  return { ok: false, status: 404, reason: `no route for ${p} in virtual host ${vhost.name}` };
}

/**
 * The HTTPS route configuration a TLS client's SNI selects among those of one listener, as Envoy
 * matches filter chains on `server_names`: an exact host, then the longest wildcard suffix, then
 * "*" (which also takes clients that send no SNI). Undefined when none matches: the connection is
 * refused.
 */
export function selectBySni(
  configs: readonly RouteConfiguration[],
  sni: string | undefined,
): RouteConfiguration | undefined {
  let best: RouteConfiguration | undefined;
  let bestRank = Infinity;
  const name = sni?.toLowerCase();
  for (const rc of configs) {
    for (const host of rc.tls?.sniHosts ?? []) {
      if (name === undefined ? host !== "*" : !domainMatches(name, host)) continue;
      // Exact before wildcard, then longer wildcards (more specific) before shorter.
      const rank = domainRank(host) * 1_000_000 - host.length;
      if (rank < bestRank) {
        best = rc;
        bestRank = rank;
      }
    }
  }
  return best;
}

function compareKeys(a: NamedSpec<unknown>, b: NamedSpec<unknown>): number {
  const x = `${a.namespace}/${a.name}`, y = `${b.namespace}/${b.name}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Whether a VirtualService lists the gateway (`<ns>/<name>`, or `<name>` in its own namespace). */
function bindsTo(vs: NamedSpec<VirtualServiceSpec>, gwKey: string): boolean {
  return (vs.spec.gateways ?? []).some((g) => (g.includes("/") ? g : `${vs.namespace}/${g}`) === gwKey);
}

function routesOf(
  vs: NamedSpec<VirtualServiceSpec>,
  gwKey: string,
  port: number,
  suffix: string,
  options: GatewayRouteOptions,
): GatewayRoute[] {
  const out: GatewayRoute[] = [];
  for (const [i, rule] of (vs.spec.http ?? []).entries()) {
    if (!rule.route || rule.route.length === 0) continue;
    if (rule.redirect || rule.directResponse || rule.rewrite || rule.delegate) continue;
    const written = rule.match ?? [];
    const matches: UriMatch[] = [];
    for (const m of written) {
      const gws = m.gateways;
      if (gws && !gws.some((g) => (g.includes("/") ? g : `${vs.namespace}/${g}`) === gwKey)) continue;
      if (m.port !== undefined && m.port !== port) continue;
      const { uri, ignoreUriCase, gateways: _g, port: _p, name: _n, statPrefix: _s, ...rest } = m;
      if (Object.keys(rest).length > 0) continue;
      matches.push({
        exact: uri?.exact ?? "",
        prefix: uri === undefined ? "/" : uri.prefix ?? "",
        regex: uri?.regex ?? "",
        ignoreCase: ignoreUriCase ?? false,
      });
    }
    if (written.length > 0 && matches.length === 0) continue;
    out.push({
      name: `${vs.namespace}/${vs.name}.${i}`,
      matches,
      destinations: rule.route.map((d) => {
        const host = qualify(d.destination.host.toLowerCase(), vs.namespace, suffix);
        return {
          host,
          port: d.destination.port?.number ?? options.defaultPortOf?.(host) ?? 0,
          weight: d.weight ?? (rule.route!.length === 1 ? 100 : 0),
        };
      }),
    });
  }
  return out;
}

function parseServerHost(h: string, gatewayNamespace: string): { namespace: string; host: string } {
  const slash = h.indexOf("/");
  if (slash < 0) return { namespace: "*", host: h.toLowerCase() };
  const ns = h.slice(0, slash);
  return { namespace: ns === "." ? gatewayNamespace : ns, host: h.slice(slash + 1).toLowerCase() };
}

/** A short name (no dot) is a service of the VirtualService's namespace. */
function qualify(host: string, namespace: string, suffix: string): string {
  return host === "*" || host.includes(".") ? host : `${host}.${namespace}.svc.${suffix}`;
}

/** The more specific of two host patterns when one covers the other, else undefined. */
function intersect(a: string, b: string): string | undefined {
  if (domainMatches(a, b)) return a;
  if (domainMatches(b, a)) return b;
  return undefined;
}

/** Whether host (or the narrower pattern) `name` is covered by `pattern` ("*", "*.suffix" or exact). */
function domainMatches(name: string, pattern: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) {
    const tail = pattern.slice(1);
    return name.endsWith(tail) && name.length > tail.length &&
      (!name.startsWith("*.") || name.length >= pattern.length);
  }
  return name === pattern;
}

/** 0 exact, 1 wildcard suffix, 2 "*". */
function domainRank(d: string): number {
  return d === "*" ? 2 : d.startsWith("*.") ? 1 : 0;
}

function stripPort(host: string): string {
  if (host.startsWith("[")) {
    const close = host.indexOf("]");
    return close < 0 ? host : host.slice(0, close + 1);
  }
  const colon = host.lastIndexOf(":");
  return colon < 0 ? host : host.slice(0, colon);
}

const REGEXES = new Map<string, RegExp>();

function uriMatches(m: UriMatch, path: string): boolean {
  const p = m.ignoreCase ? path.toLowerCase() : path;
  if (m.exact !== "") return p === (m.ignoreCase ? m.exact.toLowerCase() : m.exact);
  if (m.regex !== "") {
    const key = (m.ignoreCase ? "i" : "") + m.regex;
    let re = REGEXES.get(key);
    if (re === undefined) {
      re = new RegExp(`^(?:${m.regex})$`, m.ignoreCase ? "i" : "");
      REGEXES.set(key, re);
    }
    return re.test(path);
  }
  return p.startsWith(m.ignoreCase ? m.prefix.toLowerCase() : m.prefix);
}
