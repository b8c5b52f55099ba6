/**
 * The protocol a listener's port was decided as, for the config dump (`meshctl proxy-config
 * listener` shows it): an inbound port's comes from the service ports that target it, which meshd
 * decided with shared/protocol (Istio's "Protocol Selection": appProtocol, name prefix or the
 * ServiceEntry's protocol). `carried` says what the inbound data path does with it
 * ({@link inboundRoute}; proxy/inbound/dispatch.ts acts on it per connection). The sidecar's outbound
 * listener decides per connection by its original destination (proxy/outbound/dispatch.ts): its
 * `services` list each service port's decision ({@link outboundListenerProtocol}).
 *
 * @module
 */

/** A listener's protocol as the config dump shows it (`listener.protocol`). */
export interface ListenerProtocol {
  /** Upper case, e.g. `HTTP`, `TCP`, `GRPC`; `UNKNOWN` is auto-detect (no service port names one). */
  selected: string;
  /** The service ports it was decided from: `<namespace>/<name> port <n> (<protocol>)`, sorted. */
  services: string[];
  /** What the data path carries on it today (see {@link inboundRoute} for an inbound port). */
  carried: Carried;
}

/**
 * What a listener carries: HTTP/1.1; TCP (opaque bytes under L4 policy); auto-detect per connection;
 * or HTTP/2 and gRPC (HTTP/1.1 too on such a port: the preface tells them apart, proxy/inbound/http2.ts).
 */
export type Carried =
  | "HTTP/1.1"
  | "TCP"
  | "HTTP/1.1, HTTP/2 or TCP, detected"
  | "HTTP/2 (or HTTP/1.1)"
  | "TLS, by SNI"
  | "HTTP/1.1, or TLS by SNI"
  | "per service port, by original destination";

/**
 * How the inbound data path carries a port of protocol `selected`:
 * - `http1`: HTTP, HTTP_PROXY and GRPC-WEB (HTTP/1.1 from browsers): the HTTP/1.1 path;
 * - `http2`: HTTP2 and GRPC: the HTTP/2 path (ALPN `h2`, or the preface; HTTP/1.1 without it);
 * - `detect`: UNKNOWN (no service port names it): first-bytes detection per connection;
 * - `tcp`: everything else (TCP, TLS, HTTPS through a sidecar, MONGO, MYSQL, REDIS, UDP): opaque bytes.
 * Source: Istio's "Protocol Selection" (explicit protocols, automatic detection).
 */
export function inboundRoute(selected: string): "http1" | "http2" | "tcp" | "detect" {
  switch (selected.toUpperCase()) {
    case "HTTP":
    case "HTTP_PROXY":
    case "GRPC-WEB":
      return "http1";
    case "HTTP2":
    case "GRPC":
      return "http2";
    case "":
    case "UNKNOWN":
      return "detect";
    default:
      return "tcp";
  }
}

const CARRIED: Record<ReturnType<typeof inboundRoute>, Carried> = {
  http1: "HTTP/1.1",
  http2: "HTTP/2 (or HTTP/1.1)",
  tcp: "TCP",
  detect: "HTTP/1.1, HTTP/2 or TCP, detected",
};

/** What the decision reads of the runtime snapshot's services (mesh.v1.Service, decoded). */
type Services = Readonly<
  Record<string, {
    ports: readonly { number: number; targetPort: number; protocol: string }[];
    endpoints: readonly { workload: string; ports: Readonly<Record<string, number>> }[];
  }>
>;

/**
 * The protocol of an inbound port: that of the first (by service key) service port that targets
 * this workload's `port`; auto-detect (`UNKNOWN`) when none does or the workload is not known yet.
 *
 * @param workload this proxy's workload (`namespace/name` keys the endpoints); undefined before meshd sent it
 * @param services the services meshd sent
 * @param port the inbound (container) port
 */
export function inboundListenerProtocol(
  workload: { name: string; namespace: string } | undefined,
  services: Services,
  port: number,
): ListenerProtocol {
  const found: { key: string; protocol: string }[] = [];
  if (workload) {
    const key = `${workload.namespace}/${workload.name}`;
    for (const [service, s] of Object.entries(services)) {
      for (const e of s.endpoints) {
        if (e.workload !== key) continue;
        for (const p of s.ports) {
          if ((e.ports[String(p.number)] ?? p.targetPort) !== port) continue;
          found.push({
            key: `${service} port ${p.number} (${p.protocol || "UNKNOWN"})`,
            protocol: p.protocol,
          });
        }
      }
    }
  }
  const sorted = [...new Set(found.map((f) => f.key))].sort();
  const first = found.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)[0];
  const selected = first?.protocol || "UNKNOWN";
  return { selected, services: sorted, carried: CARRIED[inboundRoute(selected)] };
}

/**
 * A gateway's listener on one port: `HTTP`, `HTTPS` when a server terminates TLS there, `TLS` when every
 * server there is PASSTHROUGH (the ClientHello's SNI picks a tcp_proxy, the bytes pass untouched).
 *
 * @param modes each server's TLS mode on the port (`undefined` for plain HTTP)
 */
export function gatewayListenerProtocol(modes: readonly (string | undefined)[]): ListenerProtocol {
  const passthrough = modes.filter((m) => m === "PASSTHROUGH").length;
  if (passthrough > 0 && passthrough === modes.length) {
    return { selected: "TLS", services: [], carried: "TLS, by SNI" };
  }
  if (modes.some((m) => m !== undefined)) {
    return {
      selected: "HTTPS",
      services: [],
      carried: passthrough > 0 ? "HTTP/1.1, or TLS by SNI" : "HTTP/1.1",
    };
  }
  return { selected: "HTTP", services: [], carried: "HTTP/1.1" };
}

/** What the outbound dispatch does with a captured connection to a service port of this protocol. */
function outboundCarried(protocol: string): string {
  switch (protocol.toUpperCase()) {
    case "HTTP":
    case "HTTP_PROXY":
      return "HTTP/1.1 by Host";
    case "HTTP2":
    case "GRPC":
    case "GRPC-WEB":
      return "HTTP/2 or HTTP/1.1";
    case "TLS":
    case "HTTPS":
      return "TLS by SNI";
    case "":
    case "UNKNOWN":
      return "detected";
    default:
      return "TCP";
  }
}

/** The sidecar's route configurations by name (VirtualService rules bound to mesh: `mesh.<tls|tcp>.<port>.<key>`). */
type Routes = Readonly<Record<string, { tlsRoutes?: readonly { name: string }[] }>>;

/** `, VirtualService rules <names>` for the mesh tls/tcp rules of a service port, or empty. */
function meshRules(routes: Routes, port: number, key: string): string {
  const names = ["tls", "tcp"].flatMap((kind) =>
    (routes[`mesh.${kind}.${port}.${key}`]?.tlsRoutes ?? []).map((r) => r.name)
  );
  return names.length === 0 ? "" : `, VirtualService rules ${names.join(", ")}`;
}

/**
 * The sidecar's outbound listener: one listener for every captured destination (Istio builds one per
 * service port; here proxy/outbound/dispatch.ts decides per connection from the original destination).
 * `selected` is `PER PORT`; `services` lists each service port as
 * `<namespace>/<name> port <n> (<protocol>) \u2192 <how it is carried>[, VirtualService rules <names>]`
 * (the `tls` and `tcp` rules bound to mesh that apply there), sorted. A connection made to the
 * listener itself (no capture) takes the HTTP/1.1 path, routed by Host.
 */
export function outboundListenerProtocol(services: Services, routes: Routes = {}): ListenerProtocol {
  const lines = Object.entries(services).flatMap(([key, s]) =>
    s.ports.map((p) =>
      `${key} port ${p.number} (${p.protocol || "UNKNOWN"}) \u2192 ${outboundCarried(p.protocol)}${
        meshRules(routes, p.number, key)
      }`
    )
  ).sort();
  return { selected: "PER PORT", services: lines, carried: "per service port, by original destination" };
}
