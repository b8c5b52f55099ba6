/**
 * Protocol selection as Istio's "Protocol Selection" describes it
 * (istio.io/latest/docs/ops/configuration/traffic-management/protocol-selection/): a Kubernetes
 * Service port's `appProtocol` when set (it takes precedence over the name), else the prefix of its
 * name (`<protocol>[-<suffix>]`); a ServiceEntry port's `protocol` field. A port that names no known
 * protocol is {@link AUTO_DETECT}: Istio sniffs the first bytes there. This mesh decides the protocol
 * here; its data path carries HTTP/1.1 only until issue 16's data path lands.
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

/** `<protocol>[-<suffix>]` to its protocol; `grpc-web` is a protocol of its own, not `grpc` with a suffix. */
function fromName(text: string): SelectedProtocol {
  const name = text.toLowerCase();
  if (name === "grpc-web" || name.startsWith("grpc-web-")) return "GRPC-WEB";
  return KNOWN[name.split("-")[0]] ?? AUTO_DETECT;
}

/**
 * The protocol of a Kubernetes Service port (Istio's kube ConvertProtocol).
 *
 * @param port the port's `name`, `appProtocol` and `protocol` (TCP, UDP or SCTP)
 * @returns upper case, e.g. `HTTP`, `GRPC`, `TCP`; {@link AUTO_DETECT} when neither names one. A set
 *   `appProtocol` decides alone: an unknown one is auto-detect even when the name is `http-…`.
 */
export function servicePortProtocol(
  port: { name?: string; appProtocol?: string; protocol?: string },
): SelectedProtocol {
  if (port.protocol === "UDP") return "UDP";
  if (port.appProtocol !== undefined && port.appProtocol !== "") {
    return KUBERNETES_APP_PROTOCOLS[port.appProtocol.toLowerCase()] ?? fromName(port.appProtocol);
  }
  return fromName(port.name ?? "");
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
