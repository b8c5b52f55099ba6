/**
 * Test builders of the snapshot's service records ({@link ServiceInfo}, {@link EndpointInfo}): the
 * defaults the proxy's tests share (a mesh-internal, statically resolved service named
 * `<name>.<namespace>.svc.cluster.local`), so that each test writes only what it is about.
 *
 * @module
 */
import type { EndpointInfo, ServiceInfo } from "./snapshot.ts";

/** A service port: `name` defaults to the protocol in lower case, `targetPort` to `number`. */
export interface PortSpec {
  number: number;
  /** Default "HTTP". */
  protocol?: string;
  targetPort?: number;
  name?: string;
}

/** What {@link serviceInfo} needs; every field but `name` and `ports` has a default. */
export interface ServiceSpec {
  name: string;
  /** Default "foo". */
  namespace?: string;
  /** Default `[<name>.<namespace>.svc.cluster.local]`. */
  hosts?: string[];
  /** Default none (no VIP). */
  addresses?: string[];
  ports: PortSpec[];
  /** Default none. */
  endpoints?: EndpointInfo[];
}

/** A mesh-internal, statically resolved service. */
export function serviceInfo(spec: ServiceSpec): ServiceInfo {
  const namespace = spec.namespace ?? "foo";
  return {
    name: spec.name,
    namespace,
    hosts: spec.hosts ?? [`${spec.name}.${namespace}.svc.cluster.local`],
    addresses: spec.addresses ?? [],
    ports: spec.ports.map((p) => {
      const protocol = p.protocol ?? "HTTP";
      return {
        name: p.name ?? protocol.toLowerCase(),
        number: p.number,
        targetPort: p.targetPort ?? p.number,
        protocol,
      };
    }),
    endpoints: spec.endpoints ?? [],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  };
}

/**
 * An endpoint on 127.0.0.1 unless `address` says otherwise; `ports` maps service port → endpoint port.
 * Proxied (mutual TLS) exactly when it has an `identity`, unless `proxied` says otherwise.
 */
export function endpointInfo(
  spec: Partial<EndpointInfo> & { ports: Record<string, number> },
): EndpointInfo {
  const identity = spec.identity ?? "";
  return {
    workload: "w",
    address: "127.0.0.1",
    labels: {},
    ...spec,
    identity,
    proxied: spec.proxied ?? identity !== "",
  };
}
