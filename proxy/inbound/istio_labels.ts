/**
 * The Istio standard-metric labels (proxy/http/istio_metrics.ts) of an inbound connection, as the
 * destination's proxy reports them (`reporter="destination"`). The source is what mutual TLS proved:
 * the peer's SPIFFE ID and its namespace; `source_workload` is `unknown` because this mesh has no peer
 * metadata exchange (Istio's `x-envoy-peer-metadata`). Plain-text peers are `unknown` throughout.
 *
 * @module
 */
import { tryParseSpiffeId } from "../../shared/identity/mod.ts";
import type { IstioLabels } from "../http/istio_metrics.ts";
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
