/**
 * The workload `meshctl experimental authz` asks about: from `--labels` (and `-n`), or the target
 * `[<type>/]<name>[.<namespace>]` found among the WorkloadEntry resources and the registry's workloads
 * of the input (files, or meshd's /debug/configz and /debug/registryz).
 *
 * @module
 */
import type { AnalysisInput } from "../analyze/input.ts";
import { parseTarget } from "../proxy_target.ts";

/** A workload: what AuthorizationPolicy selectors read. */
export interface AuthzWorkload {
  namespace: string;
  /** Absent when given by labels only. */
  name?: string;
  labels: Record<string, string>;
}

/** How the workload is named on the command line. */
export interface WorkloadFlags {
  /** `[<type>/]<name>[.<namespace>]`. */
  target?: string;
  /** `k=v` pairs, each item possibly comma-separated (`--labels app=a,version=v1`). */
  labels: string[];
  /** `-n`, default `default`. */
  namespace: string;
}

/**
 * Parses `k=v[,k=v...]` items into labels.
 *
 * @throws Error naming the flag and the bad item
 */
export function parseLabels(items: string[], flag = "--labels"): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of items.flatMap((i) => i.split(",")).filter((p) => p !== "")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`${flag}: "${pair}" is not key=value`);
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}

/**
 * Resolves the workload: `--labels` win (with the target's name, if any); else the target must name
 * a WorkloadEntry or registry workload of the input.
 *
 * @throws Error when neither is given, or naming the target and the workloads that are known
 */
export function resolveWorkload(input: AnalysisInput, flags: WorkloadFlags): AuthzWorkload {
  const target = flags.target === undefined
    ? undefined
    : parseTarget(flags.target, flags.namespace || "default");
  if (flags.labels.length > 0) {
    return {
      namespace: target?.namespace ?? (flags.namespace || "default"),
      name: target?.name,
      labels: parseLabels(flags.labels),
    };
  }
  if (!target) {
    throw new Error("name a workload: [<type>/]<name>[.<namespace>], or --labels k=v with -n <namespace>");
  }
  const known: AuthzWorkload[] = [
    ...input.resources.filter((r) => r.kind === "WorkloadEntry").map((r) => ({
      namespace: r.namespace,
      name: r.name,
      labels: ((r.resource.spec as { labels?: Record<string, string> } | undefined)?.labels) ?? {},
    })),
    ...input.workloads,
  ];
  const found = known.find((w) => w.namespace === target.namespace && w.name === target.name);
  if (found) return found;
  const names = known.map((w) => `${w.name}.${w.namespace}`).sort();
  throw new Error(
    `workload ${target.name}.${target.namespace} not found in ${input.target}` +
      (names.length > 0 ? ` (known: ${names.join(", ")})` : " (no WorkloadEntry or registered workload)") +
      "; or give its labels with --labels k=v",
  );
}
