/**
 * Where a passed-through TLS connection goes, from its ClientHello's SNI: at a gateway's PASSTHROUGH
 * server, the TLS route the SNI selects (shared's {@link selectTlsRoute}) and its destination
 * service; at a sidecar, the service whose host the SNI names (Kubernetes DNS search as
 * {@link resolveHost}, then ServiceEntry wildcard hosts, the most specific first, as Envoy matches an
 * outbound listener's filter chains on `server_names`) and its TLS port. Pure: the answer depends
 * only on the arguments.
 *
 * @module
 */
import { domainMatches, selectTlsRoute, type TlsRoute } from "../../shared/routing/mod.ts";
import { meshTlsRouteName } from "../../shared/routing/mesh_tls_routes.ts";
import type { RouteConfiguration, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import type { WeightedRoundRobin } from "./balancer.ts";
import { findService, type Resolution, resolveService, type ServicePort } from "./resolve.ts";

/** The destination of a gateway connection: the service port, or why there is none. */
export function gatewayTlsTarget(
  config: RouteConfiguration,
  sni: string | undefined,
  namespace: string | undefined,
  snapshot: Pick<RuntimeSnapshot, "services">,
  weighted: WeightedRoundRobin,
): Resolution {
  const route = selectTlsRoute(config, sni);
  if (route === undefined) {
    return {
      ok: false,
      status: 404,
      reason: `no TLS route for SNI ${sni === undefined ? "(none)" : JSON.stringify(sni)} in ${config.name}`,
    };
  }
  return resolveService(weighted.pick(route.name, route.destinations), namespace, snapshot);
}

/** Protocols whose ports take a client's own TLS at a sidecar, best first (Istio passes TLS through on them). */
const TLS_PORT_PROTOCOLS: readonly string[][] = [["TLS", "HTTPS"], ["UNKNOWN", ""]];

/**
 * The service and port a sidecar's outbound TLS connection is for.
 *
 * @param sni the ClientHello's server name (lower case), or undefined without one
 * @param originalPort the port the application dialed, when known (the original destination, which
 *   was no service address): only services without addresses that have this port qualify. Unknown
 *   (no capture): the service's one `tls`/`https` port (else its one auto-detected port; 443 among
 *   several), as a client naming the host by SNI means its TLS port.
 */
export function sidecarTlsTarget(
  sni: string | undefined,
  namespace: string | undefined,
  snapshot: Pick<RuntimeSnapshot, "services">,
  originalPort?: number,
): Resolution {
  if (sni === undefined) return { ok: false, status: 404, reason: "ClientHello without SNI" };
  // A known destination port: the destination was no service address, so only services without
  // addresses (SNI-routed) with that port qualify.
  const eligible = (s: ServiceInfo) =>
    originalPort === undefined ||
    (s.addresses.length === 0 && s.ports.some((p) => p.number === originalPort));
  let found: { key: string; host: string } | undefined;
  const exact = findService(sni, namespace, snapshot);
  if ("key" in exact && eligible(snapshot.services[exact.key])) found = exact;
  else {
    // ServiceEntry wildcard hosts: the longest (most specific) pattern wins.
    for (const [key, s] of Object.entries(snapshot.services)) {
      if (!eligible(s)) continue;
      for (const h of s.hosts) {
        const pattern = h.toLowerCase();
        if (!pattern.startsWith("*") || !domainMatches(sni, pattern)) continue;
        if (found === undefined || pattern.length > found.host.length) found = { key, host: pattern };
      }
    }
  }
  if (found === undefined) {
    return { ok: false, status: 404, reason: `no service host matches SNI ${JSON.stringify(sni)}` };
  }
  const service = snapshot.services[found.key];
  let port: ServicePort | undefined;
  if (originalPort !== undefined) {
    port = service.ports.find((p) => p.number === originalPort);
  } else {
    for (const protocols of TLS_PORT_PROTOCOLS) {
      const ports = service.ports.filter((p) => protocols.includes(p.protocol.toUpperCase()));
      port = ports.length === 1 ? ports[0] : ports.find((p) => p.number === 443);
      if (port !== undefined || ports.length > 1) break;
    }
  }
  if (port === undefined) {
    return {
      ok: false,
      status: 404,
      reason: `service ${found.key} (${found.host}) has ${
        originalPort !== undefined
          ? `no port ${originalPort}`
          : "no single TLS port (name it tls-* or https-*)"
      }; its ports: ${service.ports.map((p) => `${p.number}/${p.protocol || "auto"}`).join(", ") || "none"}`,
    };
  }
  return { ok: true, key: found.key, service, port, host: found.host };
}

/**
 * Whether a connection to an unknown address at `port` may be routed by SNI: some service without
 * addresses (a ServiceEntry of hosts only) has a TLS or HTTPS port of that number, or VirtualService
 * `tls` rules bound to mesh for that port (an auto-detected one too).
 */
export function hasSniRoutedPort(
  snapshot: Pick<RuntimeSnapshot, "services" | "routes">,
  port: number,
): boolean {
  const prefix = meshTlsRouteName(port, "");
  for (const name in snapshot.routes) {
    if (name.startsWith(prefix) && snapshot.services[name.slice(prefix.length)]?.addresses.length === 0) {
      return true;
    }
  }
  let ports = SNI_PORTS.get(snapshot.services);
  if (ports === undefined) {
    ports = new Set();
    for (const s of Object.values(snapshot.services)) {
      if (s.addresses.length > 0) continue;
      for (const p of s.ports) {
        if (TLS_PORT_PROTOCOLS[0].includes(p.protocol.toUpperCase())) ports.add(p.number);
      }
    }
    SNI_PORTS.set(snapshot.services, ports);
  }
  return ports.has(port);
}

/** The SNI-routed ports of each snapshot's services (built once per config push, read per connection). */
const SNI_PORTS = new WeakMap<object, Set<number>>();

/**
 * The VirtualService `tls` route (bound to mesh) an SNI selects on Istio's `0.0.0.0:<port>` listener:
 * among the sidecar TLS routes of every service without addresses at `port` (their filter chains
 * share that listener), the most specific SNI match ({@link selectTlsRoute}); undefined when none.
 */
export function meshTlsRouteBySni(
  snapshot: Pick<RuntimeSnapshot, "services" | "routes">,
  port: number,
  sni: string | undefined,
): TlsRoute | undefined {
  const tlsRoutes: TlsRoute[] = [];
  for (const [key, s] of Object.entries(snapshot.services)) {
    if (s.addresses.length > 0) continue;
    tlsRoutes.push(...snapshot.routes[meshTlsRouteName(port, key)]?.tlsRoutes ?? []);
  }
  if (tlsRoutes.length === 0) return undefined;
  return selectTlsRoute({ name: "", port, bindPort: port, gateways: [], virtualHosts: [], tlsRoutes }, sni);
}
