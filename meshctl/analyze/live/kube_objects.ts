/**
 * The Kubernetes objects `meshctl analyze` reads from a live cluster (Namespaces, Pods, Services),
 * reduced to what the analyzers need, and the service ports that target a pod's container ports
 * (Kubernetes' rules: a Service selects pods of its namespace by `spec.selector`; `targetPort` is a
 * number, a container port name, or absent for the service port's own number).
 *
 * @module
 */
import type { BoundPort } from "../../../shared/mod.ts";
import { servicePortProtocol } from "../../../shared/protocol/mod.ts";

type Labels = Record<string, string>;

/** A Namespace. */
export interface KubeNamespace {
  name: string;
  labels: Labels;
  annotations: Labels;
}

/** One container of a Pod. */
export interface KubeContainer {
  name: string;
  ports: { name?: string; containerPort: number }[];
}

/** A Pod. */
export interface KubePod {
  namespace: string;
  name: string;
  labels: Labels;
  annotations: Labels;
  /** Init containers (native sidecars among them) and containers. */
  containers: KubeContainer[];
  hostNetwork: boolean;
}

/** One port of a Service. */
export interface KubeServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
  appProtocol?: string;
}

/** A Service. */
export interface KubeService {
  namespace: string;
  name: string;
  labels: Labels;
  annotations: Labels;
  /** Absent or empty: selects no pods (endpoints managed by hand). */
  selector?: Labels;
  ports: KubeServicePort[];
}

/** Everything read from the cluster besides the mesh's own kinds. */
export interface ClusterObjects {
  namespaces: KubeNamespace[];
  pods: KubePod[];
  services: KubeService[];
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {};
}

function strings(v: unknown): Labels {
  return Object.fromEntries(
    Object.entries(record(v)).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

function list(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? v.map(record) : [];
}

function meta(
  o: Record<string, unknown>,
): { name: string; namespace: string; labels: Labels; annotations: Labels } {
  const m = record(o.metadata);
  return {
    name: String(m.name ?? ""),
    namespace: String(m.namespace ?? "default"),
    labels: strings(m.labels),
    annotations: strings(m.annotations),
  };
}

/** A Namespace from the API's JSON. */
export function toNamespace(o: unknown): KubeNamespace {
  const { name, labels, annotations } = meta(record(o));
  return { name, labels, annotations };
}

/** A Pod from the API's JSON. */
export function toPod(o: unknown): KubePod {
  const spec = record(record(o).spec);
  return {
    ...meta(record(o)),
    hostNetwork: spec.hostNetwork === true,
    containers: [...list(spec.initContainers), ...list(spec.containers)].map((c) => ({
      name: String(c.name ?? ""),
      ports: list(c.ports).map((p) => ({
        ...(typeof p.name === "string" ? { name: p.name } : {}),
        containerPort: Number(p.containerPort),
      })),
    })),
  };
}

/** A Service from the API's JSON. */
export function toService(o: unknown): KubeService {
  const spec = record(record(o).spec);
  const selector = strings(spec.selector);
  return {
    ...meta(record(o)),
    ...(Object.keys(selector).length > 0 ? { selector } : {}),
    ports: list(spec.ports).map((p) => ({
      ...(typeof p.name === "string" ? { name: p.name } : {}),
      port: Number(p.port),
      ...(typeof p.targetPort === "number" || typeof p.targetPort === "string"
        ? { targetPort: p.targetPort }
        : {}),
      ...(typeof p.protocol === "string" ? { protocol: p.protocol } : {}),
      ...(typeof p.appProtocol === "string" ? { appProtocol: p.appProtocol } : {}),
    })),
  };
}

/** Whether a Service's selector selects a pod (same namespace, every selector label matches). */
export function serviceSelectsPod(s: KubeService, p: KubePod): boolean {
  if (!s.selector || s.namespace !== p.namespace) return false;
  return Object.entries(s.selector).every(([k, v]) => p.labels[k] === v);
}

/** The container port a service port lands on; undefined when a named targetPort names no container port. */
export function targetContainerPort(port: KubeServicePort, pod: KubePod): number | undefined {
  if (typeof port.targetPort === "number") return port.targetPort;
  if (port.targetPort === undefined || /^\d+$/.test(port.targetPort)) {
    return port.targetPort === undefined ? port.port : Number(port.targetPort);
  }
  for (const c of pod.containers) {
    const found = c.ports.find((p) => p.name === port.targetPort);
    if (found) return found.containerPort;
  }
  return undefined;
}

/** The service ports that target the pod, with the protocol Istio would select for each. */
export function podBoundPorts(pod: KubePod, services: readonly KubeService[]): BoundPort[] {
  const out: BoundPort[] = [];
  for (const s of services) {
    if (!serviceSelectsPod(s, pod)) continue;
    for (const p of s.ports) {
      const containerPort = targetContainerPort(p, pod);
      if (containerPort === undefined) continue;
      out.push({
        service: `${s.namespace}/${s.name}`,
        servicePort: {
          number: p.port,
          ...(p.name ? { name: p.name } : {}),
          protocol: servicePortProtocol(p),
          targetPort: containerPort,
        },
        containerPort,
      });
    }
  }
  return out;
}
