/**
 * Outbound protocol dispatch: where a captured connection goes, from its original destination
 * (../capture) and the snapshot's services, as Istio's sidecar outbound listeners decide it:
 * - a service address (VIP) and port, or an endpoint address (a pod IP) and its target port (then
 *   that endpoint only, and HTTP carried as TCP to it: a pod IP names no host to route by): the
 *   port's protocol (`ServiceInfo.ports[].protocol`, shared/protocol/protocol_selection.ts) picks the
 *   path: HTTP -> the HTTP/1.1 path routed by Host (as before capture); HTTP2, GRPC, GRPC-WEB -> the
 *   listener's HTTP entry (h2c or HTTP/1.1); TLS and HTTPS -> the `tlsPassthrough` handler
 *   (./tcp_forward.ts; carried as opaque TCP while absent); UNKNOWN -> sniffed (auto-detection); everything else (TCP, MONGO,
 *   REDIS, MYSQL, ...) -> TCP to an endpoint of the service;
 * - any other destination: Istio's PassthroughCluster (plain text to the original destination), or
 *   with `outboundTrafficPolicy: REGISTRY_ONLY` its BlackHoleCluster (closed);
 * - the proxy's own outbound listener (a direct connection, a client of `http_proxy`): the HTTP path,
 *   never passed through (that would loop back into the listener).
 *
 * Pure: ./tcp_forward.ts carries the decision out.
 *
 * @module
 */
import type { EndpointInfo, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import type { OriginalDestination } from "../capture/original_destination.ts";
import type { OutboundTrafficPolicy } from "../../shared/proxy_settings/mod.ts";

/** A service port a connection was matched to. */
export interface ServiceTarget {
  /** `<namespace>/<name>`, the snapshot's key. */
  key: string;
  service: ServiceInfo;
  port: ServiceInfo["ports"][number];
  /** Set when the destination was this endpoint's address (a pod IP): only it is dialled. */
  endpoint?: EndpointInfo;
  /** Istio's cluster name, `outbound|<port>||<host>`: the stat prefix of its TCP counters. */
  cluster: string;
}

/** Istio's names for the two catch-all clusters. */
export const PASSTHROUGH_CLUSTER = "PassthroughCluster";
/** See {@link PASSTHROUGH_CLUSTER}. */
export const BLACKHOLE_CLUSTER = "BlackHoleCluster";

/** Istio's MeshConfig.outboundTrafficPolicy.mode (shared/proxy_settings). */
export type { OutboundTrafficPolicy };

/** The path of one captured connection. */
export type OutboundDispatch =
  | { path: "http"; target?: ServiceTarget; why: string }
  | { path: "tcp"; target: ServiceTarget; protocol: string }
  | { path: "http2"; target: ServiceTarget; protocol: string }
  | { path: "tls"; target: ServiceTarget; protocol: string }
  | { path: "sniff"; target: ServiceTarget }
  | { path: "passthrough"; destination: OriginalDestination }
  | { path: "blackhole"; destination: OriginalDestination };

/** What the decision reads besides the destination. */
export interface DispatchContext {
  /** The outbound listener's own port (15001). */
  listenerPort: number;
  /** The workload's own addresses (a connection to one of them at the listener's port is to the listener). */
  ownAddresses: readonly string[];
  policy: OutboundTrafficPolicy;
}

const HTTP2_PROTOCOLS = new Set(["HTTP2", "GRPC", "GRPC-WEB"]);
const TLS_PROTOCOLS = new Set(["TLS", "HTTPS"]);
const HTTP_PROTOCOLS = new Set(["HTTP", "HTTP_PROXY"]);

/** Where a port of this protocol goes (`sniff` for UNKNOWN, auto-detection). */
export function pathOfProtocol(protocol: string): "http" | "http2" | "tls" | "sniff" | "tcp" {
  const p = protocol.toUpperCase();
  if (HTTP_PROTOCOLS.has(p)) return "http";
  if (HTTP2_PROTOCOLS.has(p)) return "http2";
  if (TLS_PROTOCOLS.has(p)) return "tls";
  if (p === "UNKNOWN" || p === "") return "sniff";
  return "tcp";
}

/** `address|port` -> service port, per snapshot (built once, read per connection). */
type Index = Map<string, ServiceTarget>;
const indexes = new WeakMap<Pick<RuntimeSnapshot, "services">, Index>();

/**
 * A canonical form of an address for matching: IPv4-mapped IPv6 as IPv4, lower case, IPv6 in its
 * RFC 5952 text (`fd00:0:0::0a` and `fd00::a` are one address; the kernel reports the latter).
 */
function canonical(address: string): string {
  const a = address.toLowerCase();
  if (a.startsWith("::ffff:") && a.includes(".")) return a.slice(7);
  if (!a.includes(":")) return a;
  try {
    return new URL(`http://[${a}]/`).hostname.slice(1, -1);
  } catch {
    return a;
  }
}

function indexOf(snapshot: Pick<RuntimeSnapshot, "services">): Index {
  let index = indexes.get(snapshot);
  if (index !== undefined) return index;
  index = new Map();
  // Sorted keys: when two services claim one address and port, the same one wins in every worker.
  for (const key of Object.keys(snapshot.services).sort()) {
    const service = snapshot.services[key];
    const host = service.hosts[0] ?? `${service.name}.${service.namespace}`;
    for (const port of service.ports) {
      const cluster = `outbound|${port.number}||${host}`;
      for (const a of service.addresses) {
        const k = `${canonical(a)}|${port.number}`;
        if (!index.has(k)) index.set(k, { key, service, port, cluster });
      }
    }
  }
  // Endpoint addresses after every VIP: a VIP never loses to a pod IP.
  for (const key of Object.keys(snapshot.services).sort()) {
    const service = snapshot.services[key];
    const host = service.hosts[0] ?? `${service.name}.${service.namespace}`;
    for (const endpoint of service.endpoints) {
      for (const port of service.ports) {
        const target = endpoint.ports[String(port.number)];
        if (!Number.isInteger(target)) continue;
        const k = `${canonical(endpoint.address)}|${target}`;
        if (!index.has(k)) {
          index.set(k, { key, service, port, endpoint, cluster: `outbound|${port.number}||${host}` });
        }
      }
    }
  }
  indexes.set(snapshot, index);
  return index;
}

/** The service port at an address and port, if any (VIPs first, then endpoint addresses). */
export function serviceAt(
  snapshot: Pick<RuntimeSnapshot, "services">,
  address: string,
  port: number,
): ServiceTarget | undefined {
  return indexOf(snapshot).get(`${canonical(address)}|${port}`);
}

function isLoopback(address: string): boolean {
  const a = canonical(address);
  return a.startsWith("127.") || a === "::1" || a === "0.0.0.0" || a === "::";
}

/**
 * The path of a connection whose original destination is `destination`.
 *
 * @param destination the original destination (../capture), or undefined when it could not be read:
 *   then the HTTP path (routing by Host), as before capture
 */
export function dispatchOf(
  snapshot: Pick<RuntimeSnapshot, "services">,
  destination: OriginalDestination | undefined,
  ctx: DispatchContext,
): OutboundDispatch {
  if (destination === undefined) return { path: "http", why: "original destination unknown" };
  if (
    destination.port === ctx.listenerPort &&
    (isLoopback(destination.address) ||
      ctx.ownAddresses.some((a) => canonical(a) === canonical(destination.address)))
  ) {
    return { path: "http", why: "sent to the outbound listener itself" };
  }
  const target = serviceAt(snapshot, destination.address, destination.port);
  if (target === undefined) {
    return ctx.policy === "REGISTRY_ONLY"
      ? { path: "blackhole", destination }
      : { path: "passthrough", destination };
  }
  const protocol = target.port.protocol || "UNKNOWN";
  // A pod IP names its endpoint, not a host: HTTP (either version) to it goes byte for byte to that endpoint (over
  // mutual TLS when proxied; its inbound side serves the HTTP) instead of being routed by Host.
  if (target.endpoint !== undefined && ["http", "http2"].includes(pathOfProtocol(protocol))) {
    return { path: "tcp", target, protocol };
  }
  const path = pathOfProtocol(protocol);
  switch (path) {
    case "http":
      return { path, target, why: `${protocol} port` };
    case "sniff":
      return { path, target };
    default:
      return { path, target, protocol };
  }
}
