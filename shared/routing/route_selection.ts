/**
 * Which route a request takes at a gateway: the virtual host by Host (Envoy's order: exact
 * domain, then the longest wildcard suffix, then "*"), the server by SNI, then the first route
 * whose match holds (uri exact, prefix, regex, ignoreUriCase; port; gateways); at a PASSTHROUGH
 * server, the TLS route by SNI.
 *
 * @module
 */
import type {
  RouteConfiguration,
  RouteSelection,
  TlsRoute,
  UriMatch,
  VirtualHost,
} from "./route_configuration.ts";

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

/**
 * The route a passed-through TLS connection takes at a PASSTHROUGH server: the route whose SNI hosts
 * hold the most specific match for the client's SNI (exact, then the longest wildcard suffix, then
 * "*", which also takes a ClientHello without SNI), the first on a tie, as Envoy picks among filter
 * chains by `server_names`. Undefined when none matches: the connection is closed.
 */
export function selectTlsRoute(config: RouteConfiguration, sni: string | undefined): TlsRoute | undefined {
  let best: TlsRoute | undefined;
  let bestRank = Infinity;
  const name = sni?.toLowerCase();
  for (const route of config.tlsRoutes ?? []) {
    for (const host of route.sniHosts) {
      if (name === undefined ? host !== "*" : !domainMatches(name, host)) continue;
      const rank = domainRank(host) * 1_000_000 - host.length;
      if (rank < bestRank) {
        best = route;
        bestRank = rank;
      }
    }
  }
  return best;
}

/** Whether host (or the narrower pattern) `name` is covered by `pattern` ("*", "*.suffix" or exact). */
export function domainMatches(name: string, pattern: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) {
    const tail = pattern.slice(1);
    return name.endsWith(tail) && name.length > tail.length &&
      (!name.startsWith("*.") || name.length >= pattern.length);
  }
  return name === pattern;
}

/** 0 exact, 1 wildcard suffix, 2 "*". */
export function domainRank(d: string): number {
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
