/**
 * The pods a lab's node agent runs (`lab up --kubernetes`, deploy/lab/node_agent/), as the agent
 * records them in `.lab/<lab>/node-pods.json`: each one shaped as a lab workload (its network
 * namespace, address, sidecar), so that `lab exec`, `lab port-forward` and the quickstart reach pods
 * as they reach the topology's workloads.
 *
 * @module
 */
import { join } from "node:path";
import type { PlannedWorkload } from "./plan.ts";
import type { LabPaths } from "./state.ts";

/** A running pod: a workload named as the pod, plus its readiness. */
export interface NodePod extends PlannedWorkload {
  ready: boolean;
}

/** The file the node agent writes (whole, on every change). */
export function nodePodsFile(paths: LabPaths): string {
  return join(paths.dir, "node-pods.json");
}

/** The pods the node agent runs; empty when it writes none (not a `--kubernetes` lab, or no pods yet). */
export async function loadNodePods(paths: LabPaths): Promise<NodePod[]> {
  try {
    return JSON.parse(await Deno.readTextFile(nodePodsFile(paths))) as NodePod[];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw new Error(`${nodePodsFile(paths)}: ${(e as Error).message}`);
  }
}

/**
 * The pod `<namespace>/<name>`, else the first ready pod of that namespace whose `app` label is
 * `<name>` (as `kubectl exec deploy/<name>` picks a pod of a Deployment).
 */
export function nodePodOf(pods: NodePod[], ref: string): NodePod | undefined {
  const [namespace, name] = ref.split("/");
  const inNs = pods.filter((p) => p.namespace === namespace);
  return inNs.find((p) => p.name === name) ??
    inNs.find((p) => p.ready && p.labels.app === name) ?? inNs.find((p) => p.labels.app === name);
}
