/**
 * VirtualService `tcp` rules at the sidecars (bound to `mesh`), as Istio's
 * pilot/pkg/networking/core/tls.go `buildSidecarOutboundTCPFilterChainOpts`: for each TCP-carrying port
 * (TCP, MONGO, REDIS, MYSQL... and auto-detected ports; not HTTP, HTTP2, GRPC, TLS or HTTPS) of a
 * service that a VirtualService's hosts cover, the first rule (VirtualServices in config order, then
 * their `tcp` rules) without matches, or with a match whose static conditions hold for the workload
 * ({@link tlsMatchHolds}) and that names no `destinationSubnets`, takes every connection; none: the
 * service itself (Istio's default filter chain). A match with `destinationSubnets` is left out (the
 * proxy does not match destination addresses) and reported, as is a rule with a `subset` destination
 * (no DestinationRules); the next rule is then considered.
 *
 * A route is carried as a route configuration `mesh.tcp.<port>.<service key>` with one TLS route of
 * SNI `*` (Envoy's filter chain without `server_names`: every connection), so that the proxy takes it
 * with the same RouteConfiguration message and weighted pick as TLS routes.
 *
 * @module
 */
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import {
  type MeshTlsRouteOptions,
  type MeshTlsService,
  meshVirtualServices,
  ruleSkipper,
} from "./mesh_tls_routes.ts";
import type { GatewayWorkload, NamedSpec, RouteConfiguration } from "./route_configuration.ts";
import { MESH, passthroughTls, tlsMatchHolds, tlsRouteDestinations } from "./tls_routes.ts";

/** Port protocols whose connections are not TCP-proxied by a sidecar (HTTP routing, or TLS by SNI). */
const NOT_TCP = new Set(["HTTP", "HTTP2", "GRPC", "GRPC-WEB", "HTTP_PROXY", "TLS", "HTTPS"]);

/** The name of a service port's sidecar TCP route: `mesh.tcp.<port>.<service key>`. */
export function meshTcpRouteName(port: number, serviceKey: string): string {
  return `mesh.tcp.${port}.${serviceKey}`;
}

/** The sidecar TCP route configurations of `workload`: one per service port that a `tcp` rule takes. */
export function meshTcpRouteConfigurations(
  workload: GatewayWorkload,
  virtualServices: readonly NamedSpec<VirtualServiceSpec>[],
  services: readonly MeshTlsService[],
  options: MeshTlsRouteOptions = {},
): RouteConfiguration[] {
  const domainSuffix = options.domainSuffix ?? "cluster.local";
  const taken = new Map<string, RouteConfiguration>();
  for (const { vs, covered } of meshVirtualServices(virtualServices, services, "tcp", domainSuffix)) {
    for (const [i, rule] of (vs.spec.tcp ?? []).entries()) {
      const skip = ruleSkipper(vs, i, options);
      for (const s of covered) {
        for (const p of s.ports) {
          const name = meshTcpRouteName(p.number, s.key);
          if (NOT_TCP.has(p.protocol.toUpperCase()) || taken.has(name)) continue;
          const matches = rule.match ?? [];
          const terminal = matches.length === 0 || matches.some((m) => {
            if (!tlsMatchHolds(m, vs.namespace, MESH, p.number, workload)) return false;
            if ((m.destinationSubnets ?? []).length === 0) return true;
            skip("match with destinationSubnets is not supported at a sidecar; it never matches");
            return false;
          });
          if (!terminal) continue;
          const destinations = tlsRouteDestinations(rule, vs.namespace, { ...options, domainSuffix }, skip);
          if (destinations === undefined) continue;
          taken.set(name, {
            name,
            port: p.number,
            bindPort: p.number,
            gateways: [MESH],
            virtualHosts: [],
            tls: passthroughTls(["*"]),
            tlsRoutes: [{ name: `${vs.namespace}/${vs.name}.tcp.${i}`, sniHosts: ["*"], destinations }],
          });
        }
      }
    }
  }
  return [...taken.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * What the sidecars leave out of the VirtualService `tls` and `tcp` rules bound to mesh, one sentence
 * per rule or match, naming the field (for meshd's log, as gateways' skipped rules are logged): a
 * `subset` destination (the rule is not used: no DestinationRules) and `destinationSubnets` (the match
 * never matches).
 */
export function meshL4RuleWarnings(virtualServices: readonly NamedSpec<VirtualServiceSpec>[]): string[] {
  const out: string[] = [];
  for (const vs of virtualServices) {
    const gateways = vs.spec.gateways ?? [];
    if (gateways.length > 0 && !gateways.includes(MESH)) continue;
    for (const kind of ["tls", "tcp"] as const) {
      for (const [i, rule] of (vs.spec[kind] ?? []).entries()) {
        const at = `VirtualService ${vs.namespace}/${vs.name} spec.${kind}[${i}]`;
        const subset = (rule.route ?? []).find((d) => d.destination.subset !== undefined);
        if (subset !== undefined) {
          out.push(
            `${at}: destination ${subset.destination.host} subset ${subset.destination.subset} needs a ` +
              "DestinationRule, which is not supported; sidecars do not use the rule",
          );
        }
        for (const [j, m] of (rule.match ?? []).entries()) {
          if ((m.destinationSubnets ?? []).length === 0) continue;
          out.push(
            `${at}.match[${j}].destinationSubnets is not supported at sidecars; the match never matches`,
          );
        }
      }
    }
  }
  return out;
}

/**
 * What a workload's sidecar L4 routes ({@link meshTcpRouteConfigurations}, meshTlsRouteConfigurations)
 * depend on, so that they can be built once per group of workloads: `labels` when some `tls`/`tcp`
 * match bound to mesh names `sourceLabels` (the namespace and labels), `namespace` when some names only
 * `sourceNamespace`, `none` otherwise (the same for every workload). Remembered per array (weakly).
 */
export function meshL4RouteScope(
  virtualServices: readonly NamedSpec<VirtualServiceSpec>[],
): "labels" | "namespace" | "none" {
  let scope = SCOPES.get(virtualServices);
  if (scope === undefined) {
    scope = "none";
    for (const vs of virtualServices) {
      const gateways = vs.spec.gateways ?? [];
      if (gateways.length > 0 && !gateways.includes(MESH)) continue;
      for (const rule of [...vs.spec.tls ?? [], ...vs.spec.tcp ?? []]) {
        for (const m of rule.match ?? []) {
          if (m.sourceLabels !== undefined) scope = "labels";
          else if (m.sourceNamespace !== undefined && scope === "none") scope = "namespace";
        }
      }
    }
    SCOPES.set(virtualServices, scope);
  }
  return scope;
}

const SCOPES = new WeakMap<object, "labels" | "namespace" | "none">();
