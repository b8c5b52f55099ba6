/**
 * The protocol a listener's port was decided as, for the config dump (`meshctl proxy-config
 * listener` shows it): an inbound port's comes from the service ports that target it, which meshd
 * decided with shared/protocol (Istio's "Protocol Selection": appProtocol, name prefix or the
 * ServiceEntry's protocol). Decided only: the data path carries HTTP/1.1 on every listener until
 * issue 16's data path (TCP proxying, HTTP/2) lands, and `carried` says so.
 *
 * @module
 */

/** A listener's protocol as the config dump shows it (`listener.protocol`). */
export interface ListenerProtocol {
  /** Upper case, e.g. `HTTP`, `TCP`, `GRPC`; `UNKNOWN` is auto-detect (no service port names one). */
  selected: string;
  /** The service ports it was decided from: `<namespace>/<name> port <n> (<protocol>)`, sorted. */
  services: string[];
  /** What the data path carries on it today. */
  carried: "HTTP/1.1";
}

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
  return { selected: first?.protocol || "UNKNOWN", services: sorted, carried: "HTTP/1.1" };
}

/** An HTTP listener: the outbound one (routes by Host) and a gateway's (`HTTPS` when it terminates TLS). */
export function httpListenerProtocol(tls = false): ListenerProtocol {
  return { selected: tls ? "HTTPS" : "HTTP", services: [], carried: "HTTP/1.1" };
}
