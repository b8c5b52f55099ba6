/**
 * The analyzers that read a live cluster's Namespaces, Pods and Services (istioctl's
 * `injection.Analyzer`, `annotations.K8sAnalyzer`, `service.PortNameAnalyzer`,
 * `deployment.MultiServiceAnalyzer` (on pods),
 * `gateway.IngressGatewayPortAnalyzer` and `gateway.SelectorAnalyzer`; Istio's
 * pkg/config/analysis/analyzers). They report nothing when the input has no cluster (files, or
 * meshd's debug interface).
 *
 * @module
 */
import type { AnalysisMessage, Analyzer } from "../analyzers.ts";
import { MESSAGES, type MessageType } from "../messages.ts";
import {
  IGNORED_NAMESPACES,
  injectionDecision,
  NAMESPACE_INJECTION_LABELS,
  REVISION_LABELS,
  STATUS_ANNOTATIONS,
} from "../../../shared/internal/inject/injection_policy.ts";
import { AUTO_DETECT, servicePortProtocol } from "../../../shared/protocol/mod.ts";
import { inMeshDomain, KNOWN_ANNOTATIONS } from "./annotations.ts";
import { type KubePod, podBoundPorts, serviceSelectsPod } from "./kube_objects.ts";

/** The proxy container's names: the mesh injector's, and Istio's. */
export const PROXY_CONTAINERS: readonly string[] = ["mesh-proxy", "istio-proxy"];

/** Namespaces IST0102 leaves alone (Istio's list, with the mesh's system namespace added by the caller). */
const SYSTEM_NAMESPACES = [...IGNORED_NAMESPACES, "kube-node-lease", "local-path-storage"];

function on(
  kind: string,
  namespace: string,
  name: string,
  type: MessageType,
  ...params: unknown[]
): AnalysisMessage {
  return { type, resource: { kind, namespace, name }, params };
}

/** Whether a pod carries the mesh's proxy (as a container or a native sidecar init container). */
export function hasProxy(pod: KubePod): boolean {
  return pod.containers.some((c) => PROXY_CONTAINERS.includes(c.name));
}

/** Whether the injector would give the pod a proxy, its namespace's labels as they are now. */
function wouldInject(pod: KubePod, namespaceLabels: Record<string, string> | undefined): boolean {
  const annotations = Object.fromEntries(
    Object.entries(pod.annotations).filter(([k]) => !(STATUS_ANNOTATIONS as readonly string[]).includes(k)),
  );
  try {
    return injectionDecision(
      { metadata: { labels: pod.labels, annotations }, spec: { hostNetwork: pod.hostNetwork } },
      {
        namespace: pod.namespace,
        namespaceLabels: namespaceLabels ?? {},
        revision: "default",
        policy: "enabled",
      },
    ).inject;
  } catch {
    // A bad inject label or annotation: the webhook refuses the pod; nothing to say here.
    return false;
  }
}

function checkAnnotations(
  kind: "Pod" | "Service" | "Namespace",
  namespace: string,
  name: string,
  annotations: Record<string, string>,
  report: (m: AnalysisMessage) => void,
): void {
  for (const key of Object.keys(annotations)) {
    if (!inMeshDomain(key)) continue;
    const kinds = KNOWN_ANNOTATIONS.get(key);
    if (!kinds) report(on(kind, namespace, name, MESSAGES.UnknownAnnotation, key));
    else if (!kinds.includes("*") && !kinds.includes(kind)) {
      report(on(kind, namespace, name, MESSAGES.MisplacedAnnotation, key, kinds.join(", ")));
    }
  }
}

/** Whether a port name follows Istio's `<protocol>[-<suffix>]` convention (or appProtocol names one). */
function namedByConvention(port: { name?: string; appProtocol?: string }): boolean {
  if (port.appProtocol) return true;
  const name = port.name ?? "";
  const prefix = name.toLowerCase().split("-")[0];
  return prefix === "tcp" || servicePortProtocol({ name }) !== AUTO_DETECT;
}

/** The analyzers, in the order they run. */
export const KUBE_ANALYZERS: readonly Analyzer[] = [
  {
    name: "injection.Analyzer",
    description: "Checks namespaces for injection labels and pods for a missing proxy (live cluster only)",
    analyze(input, report) {
      const cluster = input.cluster;
      if (!cluster) return;
      const skipped = new Set([...SYSTEM_NAMESPACES, input.rootNamespace]);
      const labels = new Map(cluster.namespaces.map((n) => [n.name, n.labels]));
      for (const ns of cluster.namespaces) {
        if (skipped.has(ns.name)) continue;
        const keys = [...NAMESPACE_INJECTION_LABELS, ...REVISION_LABELS];
        if (!keys.some((k) => ns.labels[k] !== undefined)) {
          report(on("Namespace", "", ns.name, MESSAGES.NamespaceNotInjected, ns.name, ns.name));
        }
      }
      for (const pod of cluster.pods) {
        if (skipped.has(pod.namespace) || hasProxy(pod)) continue;
        if (wouldInject(pod, labels.get(pod.namespace))) {
          report(
            on("Pod", pod.namespace, pod.name, MESSAGES.PodMissingProxy, `${pod.name}.${pod.namespace}`),
          );
        }
      }
    },
  },
  {
    name: "annotations.K8sAnalyzer",
    description: "Finds unknown and misplaced mesh and Istio annotations on namespaces, services and pods",
    analyze(input, report) {
      const cluster = input.cluster;
      if (!cluster) return;
      for (const n of cluster.namespaces) checkAnnotations("Namespace", "", n.name, n.annotations, report);
      for (const s of cluster.services) {
        checkAnnotations("Service", s.namespace, s.name, s.annotations, report);
      }
      for (const p of cluster.pods) checkAnnotations("Pod", p.namespace, p.name, p.annotations, report);
    },
  },
  {
    name: "service.PortNameAnalyzer",
    description: "Finds service ports whose name names no protocol (without appProtocol they are plain TCP)",
    analyze(input, report) {
      const cluster = input.cluster;
      if (!cluster) return;
      const skipped = new Set([...SYSTEM_NAMESPACES, input.rootNamespace]);
      for (const s of cluster.services) {
        if (skipped.has(s.namespace)) continue;
        for (const p of s.ports) {
          if (p.protocol === "UDP" || p.protocol === "SCTP" || namedByConvention(p)) continue;
          const target = p.targetPort === undefined ? String(p.port) : String(p.targetPort);
          report(on(
            "Service",
            s.namespace,
            s.name,
            MESSAGES.PortNameIsNotUnderNamingConvention,
            p.name ?? "",
            p.port,
            target,
          ));
        }
      }
    },
  },
  {
    name: "deployment.MultiServiceAnalyzer",
    description: "Finds pods whose container port several Services target with different protocols",
    analyze(input, report) {
      const cluster = input.cluster;
      if (!cluster) return;
      for (const pod of cluster.pods) {
        const byPort = new Map<number, Set<string>>();
        for (const b of podBoundPorts(pod, cluster.services)) {
          const protocols = byPort.get(b.containerPort) ?? new Set<string>();
          protocols.add(`${b.service} ${b.servicePort.protocol}`);
          byPort.set(b.containerPort, protocols);
        }
        for (const [port, uses] of byPort) {
          const protocols = new Set([...uses].map((u) => u.split(" ")[1]));
          if (protocols.size < 2) continue;
          report(on(
            "Pod",
            pod.namespace,
            pod.name,
            MESSAGES.DeploymentAssociatedToMultipleServices,
            pod.name,
            port,
            [...uses].sort().join(", "),
          ));
        }
      }
    },
  },
  {
    name: "gateway.IngressGatewayPortAnalyzer",
    description:
      "Checks that a Gateway's selector matches pods and that its server ports are exposed on them",
    analyze(input, report) {
      const cluster = input.cluster;
      if (!cluster) return;
      for (const r of input.resources) {
        if (r.resource.kind !== "Gateway") continue;
        const selector = r.resource.spec.selector ?? {};
        const label = Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(",");
        const pods = cluster.pods.filter((p) =>
          Object.entries(selector).every(([k, v]) => p.labels[k] === v)
        );
        if (pods.length === 0) {
          report({
            ...on(r.kind, r.namespace, r.name, MESSAGES.ReferencedResourceNotFound, "selector", label),
          });
          continue;
        }
        const exposed = new Set<number>();
        for (const pod of pods) {
          for (const c of pod.containers) for (const p of c.ports) exposed.add(p.containerPort);
          for (const s of cluster.services.filter((s) => serviceSelectsPod(s, pod))) {
            for (const p of s.ports) exposed.add(p.port);
          }
        }
        for (const server of r.resource.spec.servers ?? []) {
          const port = server.port?.number;
          if (port !== undefined && !exposed.has(port)) {
            report(on(r.kind, r.namespace, r.name, MESSAGES.GatewayPortNotOnWorkload, label, port));
          }
        }
      }
    },
  },
];
