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
 * PASSTHROUGH servers (HTTPS or TLS) route by SNI with the bound VirtualServices' `tls` rules
 * ("tls.<port>.<port name>.<gateway>.<namespace>", ./tls_routes.ts).
 *
 * Partial, on purpose (said in the README): HTTP, HTTPS and passthrough TLS servers only; TLS modes
 * SIMPLE and MUTUAL with `credentialName`, and PASSTHROUGH, only (ISTIO_MUTUAL, AUTO_PASSTHROUGH,
 * OPTIONAL_MUTUAL, file certificates and two `credentialNames` are skipped, each reported through
 * `onSkip`); HTTP matches on `uri` (exact, prefix, regex, ignoreUriCase),
 * `port` and `gateways` only (a match with other conditions never matches, so that no request is
 * routed more widely than the rule says); routes with `route` destinations only (redirect,
 * directResponse, rewrite, delegate are skipped).
 *
 * @module
 */
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import { labelsMatch } from "../policy/workload_selection.ts";
import { parseDuration } from "../api/schemas/duration.ts";
import type {
  GatewayRoute,
  GatewayRouteOptions,
  GatewayWorkload,
  NamedSpec,
  RouteConfiguration,
  ServerTls,
  UriMatch,
} from "./route_configuration.ts";
import { type GatewayServer, serverTls } from "./server_tls.ts";
import { isPassthrough, passthroughConfiguration } from "./tls_routes.ts";
import { domainRank } from "./route_selection.ts";
import { bindsTo, intersect, namesGateway, parseServerHost, qualify } from "./hosts.ts";

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
  const tlsServers: {
    gw: NamedSpec<GatewaySpec>;
    index: number;
    server: GatewayServer;
    tls: ServerTls | "PASSTHROUGH";
  }[] = [];
  for (const gw of selected) {
    const gwKey = `${gw.namespace}/${gw.name}`;
    for (const [index, server] of (gw.spec.servers ?? []).entries()) {
      const port = server.port.number;
      if (port === undefined) continue;
      const skip = (reason: string) => options.onSkip?.({ gateway: gwKey, server: index, port, reason });
      const protocol = (server.port.protocol ?? "").toUpperCase();
      if (isPassthrough(server)) {
        tlsServers.push({ gw, index, server, tls: "PASSTHROUGH" });
        continue;
      }
      if (protocol === "HTTPS") {
        const tls = serverTls(server, options);
        if (typeof tls === "string") skip(tls);
        else tlsServers.push({ gw, index, server, tls });
        continue;
      }
      if (protocol !== "HTTP") {
        skip(
          `protocol ${server.port.protocol} is not supported (HTTP, HTTPS, and TLS with tls.mode PASSTHROUGH only)`,
        );
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
  const passthrough: RouteConfiguration[] = [];
  for (const { gw, index, server, tls } of tlsServers) {
    const port = server.port.number!;
    const skip = (reason: string) =>
      options.onSkip?.({ gateway: `${gw.namespace}/${gw.name}`, server: index, port, reason });
    if (entries.has(`http.${port}`)) {
      skip(`port ${port} also has plain-text HTTP servers; one port cannot serve both`);
      continue;
    }
    if (tls === "PASSTHROUGH") {
      const rc = passthroughConfiguration(workload, gw, server, services, {
        ...options,
        domainSuffix: suffix,
      });
      if (typeof rc === "string") skip(rc);
      else passthrough.push(rc);
      continue;
    }
    // Istio's gatewayRDSRouteName; port names are unique within a Gateway, so each server has its own.
    const name = `https.${port}.${server.port.name}.${gw.name}.${gw.namespace}`;
    const entry: RouteEntry = { port, gateways: new Set(), hosts: new Map(), redirect: new Set(), tls };
    addServer(entry, gw, server, services, suffix, options);
    entries.set(name, entry);
  }
  const built = [...entries.entries()]
    .map(([name, e]): RouteConfiguration => ({
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
  return [...built, ...passthrough]
    .sort((a, b) => a.port - b.port || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

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
      if (gws && !gws.some((g) => namesGateway(g, vs.namespace, gwKey))) continue;
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
    const timeoutMs = timeoutMsOf(rule.timeout);
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
      ...(timeoutMs > 0 ? { timeoutMs } : {}),
    });
  }
  return out;
}

/**
 * A VirtualService `http[].timeout` in whole milliseconds (Istio's validation requires at least 1ms,
 * in whole milliseconds); 0 when absent or not a duration (validation reports those), or beyond
 * the wire's uint32.
 */
function timeoutMsOf(timeout: string | undefined): number {
  const ns = timeout === undefined ? undefined : parseDuration(timeout);
  if (ns === undefined || ns <= 0n) return 0;
  const ms = Number(ns / 1_000_000n);
  return ms <= 0xffff_ffff ? ms : 0;
}

function compareKeys(a: NamedSpec<unknown>, b: NamedSpec<unknown>): number {
  const x = `${a.namespace}/${a.name}`, y = `${b.namespace}/${b.name}`;
  return x < y ? -1 : x > y ? 1 : 0;
}
