/**
 * The Istio standard-metric labels (./istio_metrics.ts) of an inbound connection, as the destination's
 * proxy reports them (`reporter="destination"`), and of an outbound request (`reporter="source"`).
 * Inbound, the source is what mutual TLS proved: the peer's SPIFFE ID and its namespace;
 * `source_workload` is `unknown` because this mesh has no peer metadata exchange (Istio's
 * `x-envoy-peer-metadata`). Plain-text peers are `unknown` throughout.
 *
 * @module
 */
import { tryParseSpiffeId } from "../../shared/identity/mod.ts";
import type { IstioLabels } from "./istio_metrics.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

type Destination = Pick<
  IstioLabels,
  "destination_workload" | "destination_workload_namespace" | "destination_principal" | "destination_service"
>;

// Per snapshot object (replaced on every change): the service lookup runs once per change, not per connection.
const destinations = new WeakMap<RuntimeSnapshot, Destination>();

function destinationOf(snapshot: RuntimeSnapshot): Destination {
  let d = destinations.get(snapshot);
  if (d !== undefined) return d;
  const w = snapshot.workload;
  const key = w === undefined ? "" : `${w.namespace}/${w.name}`;
  const service = w === undefined
    ? undefined
    : Object.values(snapshot.services).find((s) => s.endpoints.some((e) => e.workload === key));
  d = {
    destination_workload: w?.name || "unknown",
    destination_workload_namespace: w?.namespace || "unknown",
    destination_principal: snapshot.certificate?.spiffeId || "unknown",
    destination_service: service?.hosts[0] ?? (service ? `${service.name}.${service.namespace}` : "unknown"),
  };
  destinations.set(snapshot, d);
  return d;
}

/** The labels of a connection from `principal` (its SPIFFE ID; null for plain text). */
export function inboundIstioLabels(snapshot: RuntimeSnapshot, principal: string | null): IstioLabels {
  const d = destinationOf(snapshot);
  return {
    reporter: "destination",
    source_workload: "unknown",
    source_workload_namespace: (principal && tryParseSpiffeId(principal)?.namespace) || "unknown",
    source_principal: principal || "unknown",
    ...d,
    destination_principal: principal ? d.destination_principal : "unknown",
    request_protocol: "http",
    connection_security_policy: principal ? "mutual_tls" : "none",
  };
}

/** The labels of this proxy's own workload as the source of outbound requests. */
function sourceOf(snapshot: RuntimeSnapshot) {
  const w = snapshot.workload;
  return {
    reporter: "source",
    source_workload: w?.name || "unknown",
    source_workload_namespace: w?.namespace || "unknown",
    source_principal: snapshot.certificate?.spiffeId || "unknown",
  };
}

/**
 * The labels of outbound requests to `endpoint` of `service` (`reporter="source"`); both null for the
 * proxy's own replies (no route, no endpoint), whose destination is `unknown` (a requested host is
 * never a label: any client could make up hosts). `connection_security_policy` is `unknown`, as Istio
 * reports it on the source side.
 */
export function outboundIstioLabels(
  snapshot: RuntimeSnapshot,
  service: { name: string; namespace: string; hosts: string[] } | null,
  endpoint: { workload: string; identity: string; proxied: boolean } | null,
): IstioLabels {
  const slash = endpoint?.workload.indexOf("/") ?? -1;
  return {
    ...sourceOf(snapshot),
    destination_workload: (endpoint && endpoint.workload.slice(slash + 1)) || "unknown",
    destination_workload_namespace: (endpoint && slash > 0 && endpoint.workload.slice(0, slash)) ||
      service?.namespace || "unknown",
    destination_principal: (endpoint?.proxied && endpoint.identity) || "unknown",
    destination_service: service ? service.hosts[0] ?? `${service.name}.${service.namespace}` : "unknown",
    request_protocol: "http",
    connection_security_policy: "unknown",
  };
}
