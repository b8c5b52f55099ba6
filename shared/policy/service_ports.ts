/**
 * Which container ports of a workload a service targets ("bound" ports). Istio applies a
 * PeerAuthentication's `portLevelMtls` only to such ports, and a port's protocol (HTTP or TCP)
 * comes from the service port that targets it. Source: Istio's ServiceEntry reference
 * (`workloadSelector`: "selects workloads in the same namespace"; `ports[].targetPort`; WorkloadEntry
 * `ports`: "named port of the service → endpoint port") and the policies seed, PeerAuthentication
 * `portLevelMtls` ("Only effective when the port is bound to a service").
 *
 * @module
 */
import { labelsMatch } from "./workload_selection.ts";

/** The parts of a ServiceEntry port that decide where it lands. */
export interface ServicePortSpec {
  /** Service port number, 1-65535. */
  number: number;
  /** Port name; a WorkloadEntry may map it to its own port. */
  name?: string;
  /** Protocol, e.g. HTTP, TCP; missing means unknown (Istio sniffs it). */
  protocol?: string;
  /** Endpoint port when the WorkloadEntry does not name one; default `number`. */
  targetPort?: number;
}

/** The parts of a ServiceEntry that decide which workloads it selects. */
export interface SelectingService {
  /** Its name and namespace (missing namespace: `default`). */
  metadata: { name: string; namespace?: string };
  /** `workloadSelector.labels` selects WorkloadEntries of the same namespace; absent selects none. */
  spec?: { workloadSelector?: { labels?: Record<string, string> }; ports?: readonly ServicePortSpec[] };
}

/** The parts of a WorkloadEntry that decide whether a service selects it and on which port. */
export interface PortedWorkload {
  /** Its namespace (missing: `default`). */
  metadata: { namespace?: string };
  /** Labels, and named ports (service port name → endpoint port). */
  spec?: { labels?: Record<string, string>; ports?: Record<string, number> };
}

/** One service port that targets a container port of a workload. */
export interface BoundPort {
  /** `<namespace>/<name>` of the ServiceEntry. */
  service: string;
  /** The service port. */
  servicePort: ServicePortSpec;
  /** The workload's port it lands on. */
  containerPort: number;
}

/**
 * The endpoint port of a service port: the workload's port named like the service port, else
 * `targetPort`, else the service port's number.
 */
export function endpointPort(
  port: ServicePortSpec,
  workloadPorts: Readonly<Record<string, number>> = {},
): number {
  const named = port.name ? workloadPorts[port.name] : undefined;
  return named ?? port.targetPort ?? port.number;
}

/** Whether a ServiceEntry selects a WorkloadEntry: same namespace and its workloadSelector's labels. */
export function serviceSelectsWorkload(service: SelectingService, workload: PortedWorkload): boolean {
  const selector = service.spec?.workloadSelector?.labels;
  if (selector === undefined) return false;
  if ((service.metadata.namespace ?? "default") !== (workload.metadata.namespace ?? "default")) return false;
  return labelsMatch(selector, workload.spec?.labels ?? {});
}

/**
 * The service ports that target a workload, in the order of `services` and their ports.
 *
 * @returns one entry per (service, port) pair; empty when no service selects the workload
 */
export function boundPorts(workload: PortedWorkload, services: readonly SelectingService[]): BoundPort[] {
  const out: BoundPort[] = [];
  for (const s of services) {
    if (!serviceSelectsWorkload(s, workload)) continue;
    for (const p of s.spec?.ports ?? []) {
      out.push({
        service: `${s.metadata.namespace ?? "default"}/${s.metadata.name}`,
        servicePort: p,
        containerPort: endpointPort(p, workload.spec?.ports),
      });
    }
  }
  return out;
}
