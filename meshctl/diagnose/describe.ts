/**
 * `meshctl x describe pod <pod>` and `x describe service <svc>` (meshctl seed, "experimental";
 * istioctl's `x describe`): which Services, mTLS mode (per port, and the policy that decided it),
 * authorization policies, request authentications and VirtualServices apply to a pod, and why. The
 * decisions are shared/policy's (effectivePeerAuthentication, policyAppliesTo), the code meshd and
 * the proxy run; the objects are read as `analyze` reads a cluster (analyze/live/cluster_input.ts).
 * Reads configuration only: it does not ask the proxy what it received (istioctl also reads the
 * pod's Envoy config dump through a port-forward, which the test API server does not serve).
 *
 * @module
 */
import {
  effectivePeerAuthentication,
  type PeerAuthenticationPolicy,
  policyAppliesTo,
} from "../../shared/mod.ts";
import type { AnalysisInput, AnalyzedResource } from "../analyze/input.ts";
import type { KubePod, KubeService } from "../analyze/live/kube_objects.ts";
import { podBoundPorts, serviceSelectsPod } from "../analyze/live/kube_objects.ts";
import { hasProxy } from "../analyze/live/kube_analyzers.ts";
import { REVISION_LABELS } from "../../shared/internal/inject/injection_policy.ts";

const RULE = "--------------------\n";

function ref(r: { name: string; namespace: string }): string {
  return `${r.name}.${r.namespace}`;
}

function ofKind(input: AnalysisInput, kind: string): AnalyzedResource[] {
  return input.resources.filter((r) => r.kind === kind);
}

function selectorLabels(r: AnalyzedResource): Record<string, string> | undefined {
  const spec = r.resource.spec as { selector?: { matchLabels?: Record<string, string> } };
  return spec.selector?.matchLabels;
}

function scopeOf(r: AnalyzedResource, rootNamespace: string): string {
  const labels = selectorLabels(r);
  if (labels && Object.keys(labels).length > 0) return "workload selector";
  return r.namespace === rootNamespace ? "mesh-wide" : "namespace-wide";
}

/** The VirtualServices whose hosts name the service (short name, `<name>.<ns>`, or FQDN). */
function virtualServicesFor(input: AnalysisInput, s: KubeService): AnalyzedResource[] {
  const names = new Set([
    `${s.name}.${s.namespace}.svc.cluster.local`,
    `${s.name}.${s.namespace}.svc`,
    `${s.name}.${s.namespace}`,
  ]);
  return ofKind(input, "VirtualService").filter((r) => {
    const hosts = (r.resource.spec as { hosts?: string[] }).hosts ?? [];
    return hosts.some((h) => names.has(h) || (h === s.name && r.namespace === s.namespace) || h === "*");
  });
}

/**
 * The description of one pod.
 *
 * @throws RangeError when a PeerAuthentication that applies has a bad creationTimestamp
 */
export function describePod(input: AnalysisInput, pod: KubePod, ignoreUnmeshed = false): string {
  const cluster = input.cluster!;
  let out = `Pod: ${pod.name}\n`;
  const revision = REVISION_LABELS.map((k) => pod.labels[k]).find((v) => v !== undefined) ?? "default";
  out += `   Pod Revision: ${revision}\n`;
  const ports = pod.containers.flatMap((c) => c.ports.map((p) => `${p.containerPort} (${c.name})`));
  out += `   Pod Ports: ${ports.join(", ") || "none"}\n`;
  if (!hasProxy(pod)) {
    if (!ignoreUnmeshed) {
      out += `WARNING: ${pod.name}.${pod.namespace} is not part of the mesh: no mesh-proxy container\n`;
    }
    return out;
  }
  const bound = podBoundPorts(pod, cluster.services);
  for (const s of cluster.services.filter((s) => serviceSelectsPod(s, pod))) {
    out += RULE + `Service: ${s.name}\n`;
    for (const b of bound.filter((b) => b.service === `${s.namespace}/${s.name}`)) {
      const p = b.servicePort;
      out += `   Port: ${p.name ?? ""} ${p.number}/${p.protocol} targets pod port ${b.containerPort}\n`;
    }
    for (const vs of virtualServicesFor(input, s)) out += `   VirtualService: ${ref(vs)}\n`;
  }
  const policies: PeerAuthenticationPolicy[] = [];
  for (const r of input.resources) if (r.resource.kind === "PeerAuthentication") policies.push(r.resource);
  const containerPorts = [
    ...new Set([
      ...bound.map((b) => b.containerPort),
      ...pod.containers.flatMap((c) => c.ports.map((p) => p.containerPort)),
    ]),
  ];
  out += RULE + "Effective PeerAuthentication:\n";
  let selected: ReturnType<typeof effectivePeerAuthentication>["selected"] = {};
  for (const port of containerPorts.sort((a, b) => a - b)) {
    const e = effectivePeerAuthentication({
      namespace: pod.namespace,
      labels: pod.labels,
      port,
      portBoundToService: bound.some((b) => b.containerPort === port),
      policies,
      rootNamespace: input.rootNamespace,
    });
    selected = e.selected;
    const why = e.decidedBy.scope === "default"
      ? "no policy sets a mode: the default"
      : `${e.decidedBy.scope} policy ${ref(e.decidedBy.policy)}`;
    out += `   Port ${port}: ${e.mode} (${why})\n`;
  }
  const applied = (["mesh", "namespace", "workload"] as const).filter((k) => selected[k]).map((k) =>
    `${ref(selected[k]!)} (${k})`
  );
  out += `Applied PeerAuthentication:\n   ${applied.join(", ") || "none"}\n`;
  for (const kind of ["AuthorizationPolicy", "RequestAuthentication"]) {
    const matching = ofKind(input, kind).filter((r) =>
      policyAppliesTo(
        { metadata: { namespace: r.namespace }, spec: { selector: { matchLabels: selectorLabels(r) } } },
        pod,
        { rootNamespace: input.rootNamespace },
      )
    );
    const shown = matching.map((r) => {
      const action = kind === "AuthorizationPolicy"
        ? `${(r.resource.spec as { action?: string }).action ?? "ALLOW"}, `
        : "";
      return `${ref(r)} (${action}${scopeOf(r, input.rootNamespace)})`;
    });
    out += `Applied ${kind}:\n   ${shown.join(", ") || "none"}\n`;
  }
  return out;
}

/** The description of one service: its ports, VirtualServices, and each pod it selects. */
export function describeService(input: AnalysisInput, s: KubeService, ignoreUnmeshed = false): string {
  const cluster = input.cluster!;
  let out = `Service: ${s.name}\n`;
  for (const p of s.ports) out += `   Port: ${p.name ?? ""} ${p.port} targets ${p.targetPort ?? p.port}\n`;
  for (const vs of virtualServicesFor(input, s)) out += `   VirtualService: ${ref(vs)}\n`;
  const pods = cluster.pods.filter((p) => serviceSelectsPod(s, p));
  if (pods.length === 0) out += "   no pods selected\n";
  for (const p of pods) out += RULE + describePod(input, p, ignoreUnmeshed);
  return out;
}
