/**
 * Gateway servers that pass TLS through (Istio's "Ingress Gateway without TLS Termination":
 * `servers[].tls.mode: PASSTHROUGH`, with protocol HTTPS or TLS): the bound VirtualServices' `tls`
 * rules become routes by SNI, as Istio's gateway builds one filter chain per `tls` match with
 * `server_names` = the match's `sniHosts` within the server's hosts and a `tcp_proxy` to the
 * destination (pilot/pkg/networking/core/gateway.go, buildGatewayNetworkFiltersFromTLSRoutes).
 *
 * Conditions of a `tls` match: `sniHosts` (required), `port` (the server's), `gateways`,
 * `sourceLabels` and `sourceNamespace` (at a gateway, the gateway workload's own labels and
 * namespace, as Istio). A match with `destinationSubnets` never matches here (so nothing is routed
 * more widely than written), and a rule whose destination names a `subset` is not used
 * (DestinationRules are not supported); both are reported.
 *
 * @module
 */
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import { labelsMatch } from "../policy/workload_selection.ts";
import { bindsTo, intersect, namesGateway, parseServerHost, qualify } from "./hosts.ts";
import type {
  GatewayRouteDestination,
  GatewayRouteOptions,
  GatewayWorkload,
  NamedSpec,
  RouteConfiguration,
  ServerTls,
  TlsRoute,
} from "./route_configuration.ts";
import type { GatewayServer } from "./server_tls.ts";

/** Whether a server passes TLS through: protocol HTTPS or TLS, and `tls.mode` PASSTHROUGH (Istio's default mode). */
export function isPassthrough(server: GatewayServer): boolean {
  const protocol = (server.port.protocol ?? "").toUpperCase();
  return (protocol === "HTTPS" || protocol === "TLS") &&
    (server.tls?.mode ?? "PASSTHROUGH") === "PASSTHROUGH";
}

/** The ServerTls of a PASSTHROUGH server answering `sniHosts`: nothing to terminate with. */
export function passthroughTls(sniHosts: string[]): ServerTls {
  return {
    mode: "PASSTHROUGH",
    sniHosts,
    credentialName: "",
    caCredentialName: "",
    minProtocolVersion: "",
    maxProtocolVersion: "",
    subjectAltNames: [],
  };
}

/** A VirtualService `tls` rule and one of its matches. */
type TlsRule = NonNullable<VirtualServiceSpec["tls"]>[number];
/** The static conditions of a `tls` or `tcp` match (Istio's TLSMatchAttributes, L4MatchAttributes). */
type StaticL4Match = Pick<TlsRule["match"][number], "gateways" | "port" | "sourceLabels" | "sourceNamespace">;

/**
 * Whether a `tls` (or `tcp`) match's static conditions hold for a proxy (Istio's
 * pilot/pkg/networking/core/tls.go `matchTLS`, `matchTCP`): `gateways` (none: any) names `gateway` (`<namespace>/<name>` of a Gateway, or `mesh` for
 * the sidecars), `port` (0 or absent: any) is `port`, `sourceLabels` are among the proxy's labels and
 * `sourceNamespace` is its namespace. `sniHosts` and `destinationSubnets` are checked per connection.
 */
export function tlsMatchHolds(
  m: StaticL4Match,
  vsNamespace: string,
  gateway: string,
  port: number,
  workload: GatewayWorkload,
): boolean {
  const names = (g: string) => gateway === MESH ? g === MESH : namesGateway(g, vsNamespace, gateway);
  if (m.gateways && m.gateways.length > 0 && !m.gateways.some(names)) return false;
  if (m.port !== undefined && m.port !== 0 && m.port !== port) return false;
  if (m.sourceLabels && !labelsMatch(m.sourceLabels, workload.labels)) return false;
  return m.sourceNamespace === undefined || m.sourceNamespace === workload.namespace;
}

/** The reserved gateway name of the sidecars (VirtualService `gateways: [mesh]`). */
export const MESH = "mesh";

/**
 * The destinations of a `tls` rule (hosts qualified in the VirtualService's namespace, a missing port
 * from `defaultPortOf`, weights), or undefined after `skip` says why the rule is not used: no route, a
 * `subset` (DestinationRules are not supported), or a destination without a port.
 */
export function tlsRouteDestinations(
  rule: Pick<TlsRule, "route">,
  vsNamespace: string,
  options: Pick<GatewayRouteOptions, "defaultPortOf"> & { domainSuffix: string },
  skip: (reason: string) => void,
): GatewayRouteDestination[] | undefined {
  const route = rule.route ?? [];
  if (route.length === 0) {
    skip("has no route");
    return undefined;
  }
  const subset = route.find((d) => d.destination.subset !== undefined);
  if (subset !== undefined) {
    skip(
      `destination ${subset.destination.host} subset ${subset.destination.subset} needs a DestinationRule, ` +
        "which is not supported; the rule is not used",
    );
    return undefined;
  }
  const destinations = route.map((d) => {
    const host = qualify(d.destination.host.toLowerCase(), vsNamespace, options.domainSuffix);
    return {
      host,
      port: d.destination.port?.number ?? options.defaultPortOf?.(host) ?? 0,
      weight: d.weight ?? (route.length === 1 ? 100 : 0),
    };
  });
  const portless = destinations.find((d) => d.port === 0);
  if (portless !== undefined) {
    skip(`destination ${portless.host} names no port and is not a service with exactly one port`);
    return undefined;
  }
  return destinations;
}

/**
 * The route configuration of a PASSTHROUGH server, or why it is not served (no bound VirtualService
 * has a `tls` rule that holds there).
 *
 * @param gw the server's Gateway (`<namespace>/<name>` is what VirtualServices bind to)
 * @param server the server (`port.number` set)
 */
export function passthroughConfiguration(
  workload: GatewayWorkload,
  gw: { namespace: string; name: string },
  server: GatewayServer,
  services: readonly NamedSpec<VirtualServiceSpec>[],
  options: GatewayRouteOptions & { domainSuffix: string },
): RouteConfiguration | string {
  const gwKey = `${gw.namespace}/${gw.name}`;
  const port = server.port.number!;
  const serverHosts = server.hosts.map((h) => parseServerHost(h, gw.namespace));
  const routes: TlsRoute[] = [];
  for (const vs of services) {
    if (!bindsTo(vs, gwKey)) continue;
    for (const [i, rule] of (vs.spec.tls ?? []).entries()) {
      const skip = (reason: string) =>
        options.onSkipRoute?.({ virtualService: `${vs.namespace}/${vs.name}`, rule: i, reason });
      const sni = new Set<string>();
      for (const m of rule.match) {
        if (!tlsMatchHolds(m, vs.namespace, gwKey, port, workload)) continue;
        const names: string[] = [];
        for (const h of m.sniHosts) {
          for (const sh of serverHosts) {
            if (sh.namespace !== "*" && sh.namespace !== vs.namespace) continue;
            const name = intersect(h.toLowerCase(), sh.host);
            if (name !== undefined) names.push(name);
          }
        }
        if (names.length > 0 && (m.destinationSubnets ?? []).length > 0) {
          skip("match with destinationSubnets is not supported at a gateway; it never matches");
          continue;
        }
        for (const name of names) sni.add(name);
      }
      if (sni.size === 0) continue;
      const destinations = tlsRouteDestinations(rule, vs.namespace, options, skip);
      if (destinations === undefined) continue;
      routes.push({ name: `${vs.namespace}/${vs.name}.tls.${i}`, sniHosts: [...sni].sort(), destinations });
    }
  }
  if (routes.length === 0) {
    return "PASSTHROUGH: no VirtualService bound to this Gateway has a tls rule whose sniHosts are among " +
      "the server's hosts";
  }
  return {
    name: `tls.${port}.${server.port.name}.${gw.name}.${gw.namespace}`,
    port,
    bindPort: options.targetPortOf?.(port) ?? port,
    gateways: [gwKey],
    virtualHosts: [],
    tls: passthroughTls([...new Set(routes.flatMap((r) => r.sniHosts))].sort()),
    tlsRoutes: routes,
  };
}
