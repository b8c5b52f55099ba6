/**
 * Kubernetes objects as the push context's registry input (istiod's serviceregistry/kube controller:
 * pod.go, endpointslice.go, conversion.go), as pure functions over the informers' objects:
 *
 * - a Pod with an IP, not terminal, is a workload named `<namespace>/<pod>`, the key that a proxy's
 *   node id `sidecar~<ip>~<pod>.<namespace>~<namespace>.svc.<domain>` names; its labels get
 *   `topology.istio.io/cluster` (the cluster ID), and `security.istio.io/tlsMode: istio` when it
 *   runs the injected proxy container but lacks the label; its network is its own
 *   `topology.istio.io/network` label, else its namespace's;
 * - a Service (not ExternalName) is the service `<name>.<namespace>.svc.<domain>`, with its cluster
 *   IPs, its ports' protocols as Istio selects them (shared/protocol), and as endpoints the addresses of
 *   its EndpointSlices (label `kubernetes.io/service-name`) that are ready (every one when the Service
 *   publishes not-ready addresses), each joined to its Pod through `targetRef` (else by IP).
 *
 * An endpoint whose `targetRef` names a Pod not seen yet is left out until the Pod arrives (Istio
 * waits for it too: the endpoint would otherwise lose its identity) and counted as pending.
 *
 * @module
 */
import type { V1EndpointSlice, V1Namespace, V1Pod, V1Service, V1ServicePort } from "@kubernetes/client-node";
import {
  REGISTRY_CLUSTER_LABEL,
  type RegistryEndpoint,
  type RegistryService,
  type RegistryServicePort,
  type RegistryWorkload,
} from "../push_context/registry_services.ts";
import { servicePortProtocol } from "../../shared/protocol/mod.ts";

/** The label naming a namespace's or pod's network (Istio's). */
export const NETWORK_LABEL = "topology.istio.io/network";
/** The label that marks a mutual-TLS workload, as meshd's injector writes it. */
const TLS_MODE_LABELS = ["security.istio.io/tlsMode", "security.mesh.io/tlsMode"];
/** The proxy containers of an injected pod: meshd's injector's and Istio's. */
const PROXY_CONTAINERS = new Set(["mesh-proxy", "istio-proxy"]);
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** What the conversion needs besides the objects. */
export interface ConvertOptions {
  /** --clusterID. */
  clusterID: string;
  /** --domain: the cluster's DNS suffix, e.g. cluster.local. */
  domain: string;
}

/** Counts of what could not be converted (metrics). */
export interface ConvertCounts {
  /** Pods without an IP (disco_no_ip). */
  noIp: number;
  /**
   * `<namespace>/<service>/<address>` of each endpoint whose targetRef Pod is unknown: left out until
   * it arrives (disco_orch_endpoints_pending_pod).
   */
  pending: string[];
  /** Endpoints served with no pod, pending ones included (endpoint_no_pod). */
  noPod: number;
}

const keyOf = (namespace: string | undefined, name: string | undefined): string =>
  `${namespace ?? "default"}/${name ?? ""}`;

/** The pods as workloads, by key. Pods without an IP are counted in `counts.noIp`. */
export function podWorkloads(
  pods: readonly V1Pod[],
  namespaces: ReadonlyMap<string, V1Namespace>,
  options: ConvertOptions,
  counts: ConvertCounts,
): Map<string, RegistryWorkload> {
  const out = new Map<string, RegistryWorkload>();
  for (const pod of pods) {
    const phase = pod.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") continue;
    const ip = pod.status?.podIP;
    if (!ip) {
      counts.noIp++;
      continue;
    }
    const namespace = pod.metadata?.namespace ?? "default";
    const name = pod.metadata?.name ?? "";
    const labels: Record<string, string> = {
      ...pod.metadata?.labels,
      [REGISTRY_CLUSTER_LABEL]: options.clusterID,
    };
    if (hasProxy(pod) && !TLS_MODE_LABELS.some((l) => l in labels)) labels[TLS_MODE_LABELS[0]] = "istio";
    const network = labels[NETWORK_LABEL] ?? namespaces.get(namespace)?.metadata?.labels?.[NETWORK_LABEL];
    const ports: Record<string, number> = {};
    for (const c of pod.spec?.containers ?? []) {
      for (const p of c.ports ?? []) if (p.name) ports[p.name] = p.containerPort;
    }
    out.set(keyOf(namespace, name), {
      kind: "WorkloadEntry",
      namespace,
      name,
      resource: {
        metadata: { name, namespace, labels, annotations: { ...pod.metadata?.annotations } },
        spec: {
          address: ip,
          labels,
          ports,
          serviceAccount: pod.spec?.serviceAccountName || "default",
          ...(network ? { network } : {}),
        },
      },
    });
  }
  return out;
}

/** Whether the pod runs the injected proxy: a container, or a native sidecar (restartable init container). */
function hasProxy(pod: V1Pod): boolean {
  return (pod.spec?.containers ?? []).some((c) => PROXY_CONTAINERS.has(c.name)) ||
    (pod.spec?.initContainers ?? []).some((c) =>
      PROXY_CONTAINERS.has(c.name) && c.restartPolicy === "Always"
    );
}

/**
 * The services with their endpoints, sorted by key. Endpoints whose pod is unknown are counted.
 *
 * @param workloads the pods' workloads ({@link podWorkloads}), for the join
 * @param pods every pod, for named targetPorts (their container ports)
 */
export function registryServices(
  services: readonly V1Service[],
  slices: readonly V1EndpointSlice[],
  pods: ReadonlyMap<string, V1Pod>,
  workloads: ReadonlyMap<string, RegistryWorkload>,
  options: ConvertOptions,
  counts: ConvertCounts,
): RegistryService[] {
  const byIp = new Map<string, string>();
  for (const [key, w] of workloads) if (w.resource.spec.address) byIp.set(w.resource.spec.address, key);
  const slicesOf = new Map<string, V1EndpointSlice[]>();
  for (const s of slices) {
    const service = s.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!service || s.addressType === "FQDN") continue;
    const key = keyOf(s.metadata?.namespace, service);
    slicesOf.set(key, [...slicesOf.get(key) ?? [], s]);
  }
  const out: RegistryService[] = [];
  for (const svc of services) {
    if (svc.spec?.type === "ExternalName") continue;
    const namespace = svc.metadata?.namespace ?? "default";
    const name = svc.metadata?.name ?? "";
    const key = keyOf(namespace, name);
    const servicePorts = svc.spec?.ports ?? [];
    const endpoints = new Map<string, RegistryEndpoint>();
    for (const slice of slicesOf.get(key) ?? []) {
      for (const e of slice.endpoints ?? []) {
        if (e.conditions?.ready === false && !svc.spec?.publishNotReadyAddresses) continue;
        const ref = e.targetRef?.kind === "Pod"
          ? keyOf(e.targetRef.namespace ?? namespace, e.targetRef.name)
          : "";
        for (const address of e.addresses) {
          const workload = ref || byIp.get(address) || "";
          if (ref && !workloads.has(ref)) {
            counts.pending.push(`${key}/${address}`);
            counts.noPod++;
            continue;
          }
          if (!workload) counts.noPod++;
          const pod = workload ? pods.get(workload) : undefined;
          endpoints.set(address, {
            workload,
            address,
            ports: endpointPorts(servicePorts, slice, pod),
            labels: {},
          });
        }
      }
    }
    const endpointList = [...endpoints.values()].sort((a, b) => (a.address < b.address ? -1 : 1));
    out.push({
      key,
      name,
      namespace,
      hosts: [`${name}.${namespace}.svc.${options.domain}`],
      addresses: clusterIps(svc),
      ports: servicePorts.map((p) => servicePort(p, endpointList)),
      endpoints: endpointList,
    });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

function clusterIps(svc: V1Service): string[] {
  const ips = svc.spec?.clusterIPs ?? (svc.spec?.clusterIP ? [svc.spec.clusterIP] : []);
  return ips.filter((ip) => ip !== "None" && ip !== "");
}

/**
 * A Service port; a named targetPort shows the first endpoint's port (each endpoint has its own), or
 * the service port when no endpoint resolves it.
 */
function servicePort(p: V1ServicePort, endpoints: readonly RegistryEndpoint[]): RegistryServicePort {
  const target = typeof p.targetPort === "number"
    ? p.targetPort
    : /^\d+$/.test(String(p.targetPort ?? ""))
    ? Number(p.targetPort)
    : endpoints.find((e) => e.ports[p.port] !== undefined)?.ports[p.port] ?? p.port;
  return { name: p.name ?? "", number: p.port, targetPort: target, protocol: servicePortProtocol(p) };
}

/**
 * Service port to endpoint port: the slice's port of the same name (the endpoints controller resolved
 * it), else the targetPort: a number, or a name looked up in the pod's container ports. A slice that
 * lists ports but not this one does not serve it.
 */
function endpointPorts(
  servicePorts: readonly V1ServicePort[],
  slice: V1EndpointSlice,
  pod: V1Pod | undefined,
): Record<number, number> {
  const out: Record<number, number> = {};
  for (const sp of servicePorts) {
    if (slice.ports !== undefined && slice.ports.length > 0) {
      const match = slice.ports.find((p) => (p.name ?? "") === (sp.name ?? ""));
      if (match?.port !== undefined) out[sp.port] = match.port;
      continue;
    }
    const target = sp.targetPort ?? sp.port;
    if (typeof target === "number" || /^\d+$/.test(target)) {
      out[sp.port] = Number(target);
      continue;
    }
    for (const c of pod?.spec?.containers ?? []) {
      const named = (c.ports ?? []).find((p) => p.name === target);
      if (named) out[sp.port] = named.containerPort;
    }
  }
  return out;
}
