/**
 * Ingress gateway routing, as Istio builds a gateway's listeners and routes: which Gateways select a
 * gateway workload, which VirtualServices bind to them, the route configuration of each HTTP server
 * port (Istio's RDS "http.<port>"), and which route a request takes. meshd builds the route
 * configurations; the proxy in gateway mode selects routes; meshctl can explain both offline.
 *
 * Sources: the policies seed (RequestAuthentication at an ingress gateway), Istio's Gateway and
 * VirtualService references (istio.io/latest/docs/reference/config/networking/gateway,
 * .../virtual-service), Envoy's virtual host selection (exact domain, then the longest wildcard
 * suffix, then "*").
 *
 * Partial, on purpose (said in the README): plain-text HTTP servers only (servers with `tls` or a
 * non-HTTP protocol are skipped); HTTP matches on `uri` (exact, prefix, regex, ignoreUriCase),
 * `port` and `gateways` only (a match with other conditions never matches, so that no request is
 * routed more widely than the rule says); routes with `route` destinations only (redirect,
 * directResponse, rewrite, delegate are skipped).
 *
 * @module
 */
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
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
}

/** The route configuration of one gateway port (mesh.v1.RouteConfiguration). */
export interface RouteConfiguration {
  /** `http.<port>`. */
  name: string;
  /** The Gateway server port. */
  port: number;
  /** Where the gateway proxy listens: the service targetPort for `port`, else `port`. */
  bindPort: number;
  /** `<namespace>/<name>` of the Gateways with an HTTP server on this port. */
  gateways: string[];
  /** Exact domains first, then wildcard suffixes (longest first), then "*". */
  virtualHosts: VirtualHost[];
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
 * The route configurations of a gateway workload: one per HTTP server port of the Gateways that
 * select it, with the VirtualServices bound to those Gateways (`spec.gateways`, `<name>` meaning the
 * VirtualService's namespace) whose hosts the server exposes to their namespace. Ordered by port.
 * VirtualServices merge per domain in namespace/name order (Istio uses creation time, which files
 * do not have).
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
  const byPort = new Map<number, { gateways: Set<string>; hosts: Map<string, GatewayRoute[]> }>();
  for (const gw of selected) {
    const gwKey = `${gw.namespace}/${gw.name}`;
    for (const server of gw.spec.servers ?? []) {
      if (server.tls !== undefined || (server.port.protocol ?? "").toUpperCase() !== "HTTP") continue;
      const port = server.port.number;
      if (port === undefined) continue;
      let entry = byPort.get(port);
      if (!entry) byPort.set(port, entry = { gateways: new Set(), hosts: new Map() });
      entry.gateways.add(gwKey);
      const serverHosts = server.hosts.map((h) => parseServerHost(h, gw.namespace));
      for (const vs of services) {
        if (!bindsTo(vs, gwKey)) continue;
        const routes = routesOf(vs, gwKey, port, suffix, options);
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
          }
        }
      }
    }
  }
  return [...byPort.entries()].sort(([a], [b]) => a - b).map(([port, e]) => ({
    name: `http.${port}`,
    port,
    bindPort: options.targetPortOf?.(port) ?? port,
    gateways: [...e.gateways].sort(),
    virtualHosts: [...e.hosts.entries()]
      .sort(([a], [b]) => domainRank(a) - domainRank(b) || b.length - a.length || (a < b ? -1 : 1))
      .map(([domain, routes]) => ({ name: `${domain}:${port}`, domains: [domain], routes })),
  }));
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
