/**
 * A service registry's part of the push context (istiod's ServiceDiscovery: meshd/kube_registry is the
 * Kubernetes one). A registry hands over an immutable {@link RegistrySnapshot}: its workloads as
 * WorkloadEntry resources (so PeerAuthentication, policies, gateways and automatic mutual TLS treat a
 * pod as any workload), and its services with endpoints that name their workload. The push context
 * takes each endpoint's identity and proxied flag from that workload (secure naming), as it does for
 * a ServiceEntry's WorkloadEntries.
 *
 * @module
 */
import type { ObjectMeta, WorkloadEntrySpec } from "../../shared/mod.ts";
import { type InboundModes, withWorkloadMtls } from "./auto_mtls.ts";

/** The label naming the cluster of a registry's workloads (Istio's): set by meshd/kube_registry. */
export const REGISTRY_CLUSTER_LABEL = "topology.istio.io/cluster";

// The push context's own types are structural copies here: push_context.ts imports this module.

/** A port of a service: push_context.ts's ServicePortView. */
export interface RegistryServicePort {
  readonly name: string;
  readonly number: number;
  readonly targetPort: number;
  /** Upper case. */
  readonly protocol: string;
}

/** A workload of a registry, as the WorkloadEntry resource the push context builds workloads from. */
export interface RegistryWorkload {
  kind: "WorkloadEntry";
  namespace: string;
  name: string;
  resource: { metadata: ObjectMeta; spec: WorkloadEntrySpec };
}

/** What the push context knows of a workload (its WorkloadView), for secure naming. */
interface WorkloadIdentity extends InboundModes {
  readonly key: string;
  readonly proxied: boolean;
  readonly identity: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** A registry service as the push context shows it (its ServiceView). */
export interface RegistryServiceView {
  key: string;
  name: string;
  namespace: string;
  hosts: string[];
  addresses: string[];
  ports: RegistryServicePort[];
  endpoints: {
    workload: string;
    address: string;
    ports: Record<number, number>;
    proxied: boolean;
    identity: string;
    labels: Readonly<Record<string, string>>;
    mtlsDisabledPorts: number[];
  }[];
  location: string;
  resolution: string;
}

/** An endpoint of a registry service. */
export interface RegistryEndpoint {
  /** `<namespace>/<name>` of its workload in the snapshot, or empty when it has none (no pod). */
  readonly workload: string;
  readonly address: string;
  /** Service port number to endpoint port. */
  readonly ports: Readonly<Record<number, number>>;
  /** Labels when it has no workload (else the workload's apply). */
  readonly labels: Readonly<Record<string, string>>;
}

/** A service of a registry (a Kubernetes Service). */
export interface RegistryService {
  /** `<namespace>/<name>`. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly hosts: readonly string[];
  readonly addresses: readonly string[];
  readonly ports: readonly RegistryServicePort[];
  readonly endpoints: readonly RegistryEndpoint[];
}

/** What a registry shows on the debug pages beside its services and workloads. */
export interface RegistryDebugView {
  readonly registry: string;
  readonly clusterID: string;
  readonly [detail: string]: unknown;
}

/** One immutable view of a registry. */
export interface RegistrySnapshot {
  readonly workloads: readonly RegistryWorkload[];
  readonly services: readonly RegistryService[];
  readonly debug: RegistryDebugView;
}

/** A service registry as the discovery server runs it. */
export interface ServiceRegistry {
  /**
   * Resolves when the registry has listed everything once; `onChange` is called on every later
   * change (the server then builds a new push context).
   */
  start(onChange: () => void): Promise<void>;
  snapshot(): RegistrySnapshot;
  stop(): Promise<void>;
}

/** Ports of each workload that a registry service targets: they get PeerAuthentication's portLevelMtls. */
export function registryBoundPorts(
  registry: RegistrySnapshot | undefined,
  into: Map<string, Set<number>>,
): void {
  for (const s of registry?.services ?? []) {
    for (const e of s.endpoints) {
      if (e.workload === "") continue;
      const set = into.get(e.workload) ?? new Set<number>();
      for (const p of Object.values(e.ports)) set.add(p);
      into.set(e.workload, set);
    }
  }
}

/**
 * The registry's services as the push context shows them: MESH_INTERNAL, STATIC (the endpoints' IPs),
 * each endpoint proxied and with the SPIFFE ID of its workload when that workload is proxied.
 */
export function registryServiceViews(
  registry: RegistrySnapshot | undefined,
  workloads: ReadonlyMap<string, WorkloadIdentity>,
): RegistryServiceView[] {
  return (registry?.services ?? []).map((s) => ({
    key: s.key,
    name: s.name,
    namespace: s.namespace,
    hosts: [...s.hosts],
    addresses: [...s.addresses],
    ports: s.ports.map((p) => ({ ...p })),
    endpoints: s.endpoints.map((e) => {
      const w = e.workload === "" ? undefined : workloads.get(e.workload);
      return withWorkloadMtls(w, {
        workload: w ? w.key : "",
        address: e.address,
        ports: { ...e.ports },
        proxied: w?.proxied ?? false,
        identity: w?.proxied ? w.identity : "",
        labels: w ? w.labels : { ...e.labels },
      });
    }),
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  }));
}
