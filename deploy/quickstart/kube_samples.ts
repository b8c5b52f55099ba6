/**
 * `quickstart --kubernetes`: the task's workloads as Istio's samples on the lab's Kubernetes node
 * (`lab up --kubernetes`): the namespaces foo (label `mesh-injection=enabled`), bar (Istio's
 * `istio-injection=enabled`) and legacy (no label), then `kubectl apply -n <ns>` of Istio's
 * samples/httpbin/httpbin.yaml and samples/sleep/sleep.yaml, unchanged (tests/fixtures/istio_samples/).
 * meshd's webhook injects the sidecars; the node agent runs the pods.
 *
 * @module
 */
import { join } from "node:path";
import { labKubectl, labPaths, type LabState } from "../lab/mod.ts";
import { loadNodePods, type NodePod } from "../../shared/internal/lab/node_pods.ts";
import { repoRoot } from "../../shared/internal/lab/state.ts";

/** Istio's samples, unchanged. */
export const SAMPLES: readonly string[] = [
  "tests/fixtures/istio_samples/httpbin.yaml",
  "tests/fixtures/istio_samples/sleep.yaml",
];

/** The namespaces and the label each gets. */
export const SAMPLE_NAMESPACES: readonly { name: string; label?: string }[] = [
  { name: "foo", label: "mesh-injection=enabled" },
  { name: "bar", label: "istio-injection=enabled" },
  { name: "legacy" },
];

async function kubectl(lab: string, args: string[], stdin?: string): Promise<string[]> {
  const r = await labKubectl(lab, args, { stdin });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout.trim().split("\n");
}

/** Applies the namespaces, labels and samples; returns the commands with kubectl's lines. */
export async function applySamples(lab: string): Promise<string[]> {
  const out: string[] = [];
  for (const ns of SAMPLE_NAMESPACES) {
    out.push(`$ kubectl create namespace ${ns.name}`);
    const yaml = `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${ns.name}}\n`;
    out.push(...(await kubectl(lab, ["apply", "-f", "-"], yaml)).map((l) => `  ${l}`));
    if (ns.label) {
      out.push(`$ kubectl label namespace ${ns.name} ${ns.label}`);
      out.push(...(await kubectl(lab, ["label", "namespace", ns.name, ns.label])).map((l) => `  ${l}`));
    }
    for (const f of SAMPLES) {
      out.push(`$ kubectl apply -n ${ns.name} -f ${f}`);
      out.push(
        ...(await kubectl(lab, ["apply", "-n", ns.name, "-f", join(repoRoot(), f)])).map((l) => `  ${l}`),
      );
    }
  }
  return out;
}

/**
 * Waits until httpbin and sleep run ready in every namespace, then makes them the state's workloads
 * (named by their `app` label, as the topology's workloads are), so that the matrix probes reach them.
 *
 * @throws Error after `timeoutMs`, naming the pods still missing
 */
export async function adoptSamplePods(state: LabState, timeoutMs: number): Promise<NodePod[]> {
  const wanted = SAMPLE_NAMESPACES.flatMap((ns) => ["httpbin", "sleep"].map((app) => `${ns.name}/${app}`));
  const start = Date.now();
  for (;;) {
    const pods = await loadNodePods(labPaths(state.name));
    const found = wanted.map((ref) => pods.find((p) => p.ready && `${p.namespace}/${p.labels.app}` === ref));
    if (found.every((p) => p !== undefined)) {
      const adopted = found.map((p) => ({ ...p!, name: p!.labels.app }));
      state.plan!.workloads = adopted;
      return adopted;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(
        `pods not ready within ${timeoutMs} ms: ${wanted.filter((_, i) => !found[i]).join(", ")}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
