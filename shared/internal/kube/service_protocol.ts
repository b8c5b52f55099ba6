/**
 * The protocol of a Kubernetes Service port, as Istio's "Protocol Selection"
 * (istio.io/latest/docs/ops/configuration/traffic-management/protocol-selection/): the port's
 * `appProtocol` when set, else the prefix of its name (`<protocol>[-<suffix>]`). A port that names no
 * known protocol is TCP: this mesh has no protocol sniffing (Istio would sniff HTTP there).
 *
 * @module
 */

/** Istio's protocol names, lower case, to the mesh's (upper case, as ServiceEntry ports). */
const KNOWN: Readonly<Record<string, string>> = {
  http: "HTTP",
  http2: "HTTP2",
  https: "HTTPS",
  grpc: "GRPC",
  "grpc-web": "GRPC-WEB",
  tcp: "TCP",
  tls: "TLS",
  udp: "UDP",
  mongo: "MONGO",
  mysql: "MYSQL",
  redis: "REDIS",
  // Kubernetes' standard appProtocol values (KEP-3726).
  "kubernetes.io/h2c": "HTTP2",
  "kubernetes.io/ws": "HTTP",
  "kubernetes.io/wss": "HTTPS",
};

/**
 * The protocol of a Service port.
 *
 * @param port the port's `name`, `appProtocol` and `protocol` (TCP, UDP or SCTP)
 * @returns upper case, e.g. `HTTP`, `GRPC`, `TCP`
 */
export function servicePortProtocol(
  port: { name?: string; appProtocol?: string; protocol?: string },
): string {
  if (port.protocol === "UDP") return "UDP";
  const fromAppProtocol = KNOWN[(port.appProtocol ?? "").toLowerCase()];
  if (fromAppProtocol) return fromAppProtocol;
  const name = (port.name ?? "").toLowerCase();
  // `grpc-web` is a protocol of its own, not `grpc` with a suffix.
  if (name === "grpc-web" || name.startsWith("grpc-web-")) return "GRPC-WEB";
  return KNOWN[name.split("-")[0]] ?? "TCP";
}
