/**
 * Protocol selection as Istio's "Protocol Selection" describes it
 * (istio.io/latest/docs/ops/configuration/traffic-management/protocol-selection/): a Kubernetes
 * Service port's `appProtocol` when set (it takes precedence over the name), else the prefix of its
 * name (`<protocol>[-<suffix>]`); a ServiceEntry port's `protocol` field. A port that names no known
 * protocol is {@link AUTO_DETECT}: the proxies detect HTTP/1.1, the HTTP/2 preface or a TLS ClientHello
 * from the first bytes there, as Istio does; a Kubernetes port of a server-first protocol Istio knows
 * (SMTP 25, DNS 53, MySQL 3306, MongoDB 27017) is TCP instead, since detection would wait for a client
 * that waits for the server.
 *
 * @module
 */

/** The protocols a port can be decided as, upper case as ServiceEntry ports write them. */
export type SelectedProtocol =
  | "HTTP"
  | "HTTP_PROXY"
  | "HTTP2"
  | "HTTPS"
  | "GRPC"
  | "GRPC-WEB"
  | "TCP"
  | "TLS"
  | "UDP"
  | "MONGO"
  | "MYSQL"
  | "REDIS"
  | "UNKNOWN";

/** No protocol named: decided from the connection's first bytes (Istio's "auto-detect", `UNKNOWN`). */
export const AUTO_DETECT: SelectedProtocol = "UNKNOWN";

/** Istio's protocol names, lower case, to the mesh's. */
const KNOWN: Readonly<Record<string, SelectedProtocol>> = {
  http: "HTTP",
  http2: "HTTP2",
  // Istio's egress-proxy protocol; a port name cannot hold `_`, a ServiceEntry protocol can.
  http_proxy: "HTTP_PROXY",
  https: "HTTPS",
  grpc: "GRPC",
  "grpc-web": "GRPC-WEB",
  tcp: "TCP",
  tls: "TLS",
  udp: "UDP",
  mongo: "MONGO",
  mysql: "MYSQL",
  redis: "REDIS",
};

/** Kubernetes' standard appProtocol values (KEP-3726), only as `appProtocol` (a name cannot hold `/`). */
const KUBERNETES_APP_PROTOCOLS: Readonly<Record<string, SelectedProtocol>> = {
  "kubernetes.io/h2c": "HTTP2",
  "kubernetes.io/ws": "HTTP",
  "kubernetes.io/wss": "HTTPS",
};

/**
 * Istio's `wellKnownPorts` (pkg/config/kube/conversion.go; the table in "Protocol Selection"): a Kubernetes
 * port that names no protocol is TCP on these, not auto-detect, because their servers speak first.
 */
const SERVER_FIRST_PORTS: ReadonlySet<number> = new Set([25, 53, 3306, 27017]);

/** `<protocol>[-<suffix>]` to its protocol; `grpc-web` is a protocol of its own, not `grpc` with a suffix. */
function fromName(text: string): SelectedProtocol {
  const name = text.toLowerCase();
  if (name === "grpc-web" || name.startsWith("grpc-web-")) return "GRPC-WEB";
  return KNOWN[name.split("-")[0]] ?? AUTO_DETECT;
}

/**
 * The protocol of a Kubernetes Service port (Istio's kube ConvertProtocol).
 *
 * @param port the port's `name`, `appProtocol`, `protocol` (TCP, UDP or SCTP) and number (`port`)
 * @returns upper case, e.g. `HTTP`, `GRPC`, `TCP`; {@link AUTO_DETECT} when neither names one, except on
 *   Istio's server-first ports (25, 53, 3306, 27017), which are `TCP`. A set `appProtocol` decides
 *   alone: an unknown one is auto-detect (or TCP on those ports) even when the name is `http-...`.
 */
export function servicePortProtocol(
  port: { name?: string; appProtocol?: string; protocol?: string; port?: number },
): SelectedProtocol {
  if (port.protocol === "UDP") return "UDP";
  const named = port.appProtocol !== undefined && port.appProtocol !== ""
    ? KUBERNETES_APP_PROTOCOLS[port.appProtocol.toLowerCase()] ?? fromName(port.appProtocol)
    : fromName(port.name ?? "");
  return named === AUTO_DETECT && port.port !== undefined && SERVER_FIRST_PORTS.has(port.port)
    ? "TCP"
    : named;
}

/**
 * The protocol of a ServiceEntry (or lab topology) port: its `protocol` field in any case. Unlike a
 * Kubernetes port, the name is not read (Istio's ServiceEntry conversion).
 *
 * @returns upper case; {@link AUTO_DETECT} when the field is missing or names no known protocol
 */
export function serviceEntryPortProtocol(port: { protocol?: string }): SelectedProtocol {
  const text = (port.protocol ?? "").toLowerCase();
  return KNOWN[text] ?? AUTO_DETECT;
}

/**
 * How authorization treats a port of this protocol (Istio builds an HTTP filter chain for HTTP
 * protocols, a TCP one for the others, and both for auto-detect).
 *
 * @returns `http` (HTTP, HTTP_PROXY, HTTP2, GRPC, GRPC-WEB), `auto` (UNKNOWN: either, decided per connection)
 *   or `tcp` (everything else: TCP, TLS, HTTPS through a sidecar, MONGO, MYSQL, REDIS, UDP)
 */
export function authorizationLayer(protocol: string): "http" | "tcp" | "auto" {
  const p = protocol.toUpperCase();
  if (p === "HTTP" || p === "HTTP_PROXY" || p === "HTTP2" || p === "GRPC" || p === "GRPC-WEB") return "http";
  return p === AUTO_DETECT || p === "" ? "auto" : "tcp";
}
