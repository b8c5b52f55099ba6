/**
 * VirtualService `tls` rules at the sidecars (bound to `mesh`): for each service port that takes a
 * client's own TLS, the rules of the VirtualServices whose hosts cover the service, as Istio's
 * pilot/pkg/networking/core/tls.go `buildSidecarOutboundTLSFilterChainOpts` builds one filter chain per
 * match (`server_names` = the match's `sniHosts`, a `tcp_proxy` to the rule's destinations) on the
 * service's outbound listener. Istio's "Egress gateways for HTTPS traffic" task routes
 * `edition.cnn.com:443` to the egress gateway this way.
 *
 * Static conditions are decided here for one workload ({@link tlsMatchHolds}: `gateways` (none: any,
 * else must include `mesh`), `port`, `sourceLabels`, `sourceNamespace`); the SNI per connection by the
 * proxy ({@link selectTlsRoute}). As Istio, a later match whose `sniHosts` repeat an earlier one's
 * is never reached and is left out. A match with `destinationSubnets` is left out (the proxy does
 * not match destination addresses; nothing is routed more widely than written) and reported, as is a
 * rule with a `subset` destination. VirtualServices' `exportTo` is not applied (every sidecar sees
 * every VirtualService, as for gateways).
 *
 * @module
 */
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import { qualify } from "./hosts.ts";
import type { GatewayWorkload, NamedSpec, RouteConfiguration, TlsRoute } from "./route_configuration.ts";
import { domainMatches } from "./route_selection.ts";
import { MESH, passthroughTls, tlsMatchHolds, tlsRouteDestinations } from "./tls_routes.ts";

/** A service as the sidecar's TLS routing sees it. */
export interface MeshTlsService {
  /** `<namespace>/<name>`, the key of the service in the proxy's snapshot. */
  key: string;
  /** Lower-case host names (ServiceEntry hosts, or the Kubernetes service's FQDN). */
  hosts: readonly string[];
  /** Its ports; `protocol` as selected (`TLS`, `HTTPS`, `UNKNOWN` or empty for auto-detection, ...). */
  ports: readonly { number: number; protocol: string }[];
}

/** Port protocols whose outbound connections may be TLS a sidecar routes by SNI (auto-detected too). */
const SNI_ROUTED = new Set(["TLS", "HTTPS", "UNKNOWN", ""]);

/** The name of a service port's sidecar TLS routes: `mesh.tls.<port>.<service key>`. */
export function meshTlsRouteName(port: number, serviceKey: string): string {
  return `mesh.tls.${port}.${serviceKey}`;
}

type CoveredServices = { vs: NamedSpec<VirtualServiceSpec>; covered: MeshTlsService[] }[];
const COVERED = new WeakMap<object, WeakMap<object, Map<string, CoveredServices>>>();

/**
 * The VirtualServices bound to mesh (no `gateways`, or `mesh` among them) that have `kind` rules, each
 * with the services its hosts cover (qualified in its namespace; wildcards too), in config order.
 * Remembered per pair of arrays (weakly), so neither may change after the call (meshd's push context
 * is frozen; a new config is new arrays).
 */
export function meshVirtualServices(
  virtualServices: readonly NamedSpec<VirtualServiceSpec>[],
  services: readonly MeshTlsService[],
  kind: "tls" | "tcp",
  domainSuffix: string,
): CoveredServices {
  // The same for every workload of a push: computed once per (virtual services, services) pair.
  const byServices = COVERED.get(virtualServices) ?? new WeakMap();
  COVERED.set(virtualServices, byServices);
  const memo = byServices.get(services) ?? new Map<string, CoveredServices>();
  byServices.set(services, memo);
  const key = `${kind} ${domainSuffix}`;
  const known = memo.get(key);
  if (known !== undefined) return known;
  const out: CoveredServices = [];
  memo.set(key, out);
  for (const vs of virtualServices) {
    const gateways = vs.spec.gateways ?? [];
    if ((vs.spec[kind] ?? []).length === 0 || (gateways.length > 0 && !gateways.includes(MESH))) continue;
    const vsHosts = (vs.spec.hosts ?? []).map((h) => qualify(h.toLowerCase(), vs.namespace, domainSuffix));
    const covered = services.filter((s) => s.hosts.some((h) => vsHosts.some((p) => domainMatches(h, p))));
    if (covered.length > 0) out.push({ vs, covered });
  }
  return out;
}

/** `onSkipRoute` for rule `rule` of `vs`, each reason once. */
export function ruleSkipper(
  vs: NamedSpec<VirtualServiceSpec>,
  rule: number,
  options: Pick<MeshTlsRouteOptions, "onSkipRoute">,
): (reason: string) => void {
  const reported = new Set<string>();
  return (reason) => {
    if (reported.has(reason)) return;
    reported.add(reason);
    options.onSkipRoute?.({ virtualService: `${vs.namespace}/${vs.name}`, rule, reason });
  };
}

/** Settings of {@link meshTlsRouteConfigurations} (and meshTcpRouteConfigurations). */
export interface MeshTlsRouteOptions {
  /** Cluster domain for short host names. Default cluster.local. */
  domainSuffix?: string;
  /** The port of a destination that names none: the service's one port, if it has exactly one. */
  defaultPortOf?: (host: string) => number | undefined;
  /** A rule or match that is left out, and why. */
  onSkipRoute?: (skipped: { virtualService: string; rule: number; reason: string }) => void;
}

/**
 * The sidecar TLS route configurations of `workload`: one per service port with at least one `tls`
 * match that holds there, named by {@link meshTlsRouteName}, `gateways: ["mesh"]`, PASSTHROUGH `tls`
 * with the routes' SNI names, and `tlsRoutes` in the VirtualServices' order.
 */
export function meshTlsRouteConfigurations(
  workload: GatewayWorkload,
  virtualServices: readonly NamedSpec<VirtualServiceSpec>[],
  services: readonly MeshTlsService[],
  options: MeshTlsRouteOptions = {},
): RouteConfiguration[] {
  const domainSuffix = options.domainSuffix ?? "cluster.local";
  const byName = new Map<string, { port: number; routes: TlsRoute[]; seen: Set<string> }>();
  for (const { vs, covered } of meshVirtualServices(virtualServices, services, "tls", domainSuffix)) {
    for (const [i, rule] of (vs.spec.tls ?? []).entries()) {
      const skip = ruleSkipper(vs, i, options);
      let destinations: TlsRoute["destinations"] | undefined | null = null;
      for (const s of covered) {
        for (const p of s.ports) {
          if (!SNI_ROUTED.has(p.protocol.toUpperCase())) continue;
          const sni = new Set<string>();
          for (const m of rule.match) {
            if (!tlsMatchHolds(m, vs.namespace, MESH, p.number, workload)) continue;
            if ((m.destinationSubnets ?? []).length > 0) {
              skip("match with destinationSubnets is not supported at a sidecar; it never matches");
              continue;
            }
            for (const h of m.sniHosts) sni.add(h.toLowerCase());
          }
          if (sni.size === 0) continue;
          if (destinations === null) {
            destinations = tlsRouteDestinations(rule, vs.namespace, { ...options, domainSuffix }, skip);
          }
          if (destinations === undefined) continue;
          const name = meshTlsRouteName(p.number, s.key);
          const rc = byName.get(name) ?? { port: p.number, routes: [], seen: new Set() };
          byName.set(name, rc);
          // Istio's matchHasBeenHandled: a repeat of earlier SNI names is never reached.
          const hash = [...sni].sort().join(",");
          if (rc.seen.has(hash)) continue;
          rc.seen.add(hash);
          rc.routes.push({
            name: `${vs.namespace}/${vs.name}.tls.${i}`,
            sniHosts: [...sni].sort(),
            destinations,
          });
        }
      }
    }
  }
  return [...byName.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, rc]) => ({
    name,
    port: rc.port,
    bindPort: rc.port,
    gateways: [MESH],
    virtualHosts: [],
    tls: passthroughTls([...new Set(rc.routes.flatMap((r) => r.sniHosts))].sort()),
    tlsRoutes: rc.routes,
  }));
}
