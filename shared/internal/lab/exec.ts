/**
 * `lab exec <namespace>/<workload> -- <command...>`: runs a command in a workload's network
 * namespace, as `kubectl exec` would in its pod: the workload's hosts file (service names), its
 * iptables rules (with a sidecar, outbound HTTP to services goes through it), and its variables.
 *
 * @module
 */
import { containerEnv } from "./container_env.ts";
import type { PlannedWorkload } from "./plan.ts";
import { labPaths, type LabState, loadState } from "./state.ts";
import { loadNodePods, nodePodOf } from "./node_pods.ts";

/**
 * The workload `<namespace>/<workload>` of a lab's state.
 *
 * @throws Error naming the lab's workloads when there is no such one
 */
export function workloadOf(state: LabState, ref: string): PlannedWorkload {
  const workloads = state.plan?.workloads ?? [];
  const w = workloads.find((w) => `${w.namespace}/${w.name}` === ref);
  if (w === undefined) {
    throw new Error(
      `no workload ${JSON.stringify(ref)} in lab ${state.name}; workloads: ${
        workloads.map((w) => `${w.namespace}/${w.name}`).join(", ")
      }`,
    );
  }
  return w;
}

/**
 * The state of lab `name`.
 *
 * @throws Error when the lab has no state (not up) or its state file is unreadable
 */
export async function upState(name: string, options: { dir?: string } = {}): Promise<LabState> {
  const state = await loadState(labPaths(name, options.dir));
  if (state === undefined) {
    throw new Error(`lab ${name} is not up; run: lab up <topology.yaml> --name ${name}`);
  }
  if (typeof state === "string") throw new Error(state);
  return state;
}

/** The workload `<namespace>/<workload>` of running lab `name`. */
export async function findWorkload(
  name: string,
  ref: string,
  options: { dir?: string } = {},
): Promise<PlannedWorkload> {
  const state = await upState(name, options);
  if (!state.plan?.workloads.some((w) => `${w.namespace}/${w.name}` === ref)) {
    const pod = nodePodOf(await loadNodePods(labPaths(name, options.dir)), ref);
    if (pod) return pod;
  }
  return workloadOf(state, ref);
}

/** The argv that runs `command` inside the workload (`ip netns exec` with the workload's variables). */
export function execArgv(w: PlannedWorkload, command: string[]): string[] {
  const env = Object.entries(containerEnv(w)).map(([k, v]) => `${k}=${v}`);
  return ["ip", "netns", "exec", w.netns, "env", ...env, ...command];
}

/** Runs `command` in workload `ref` with this process's stdio; resolves to its exit code. */
export async function labExec(
  name: string,
  ref: string,
  command: string[],
  options: { dir?: string } = {},
): Promise<number> {
  if (command.length === 0) throw new Error("lab exec: give a command after --");
  const [cmd, ...args] = execArgv(await findWorkload(name, ref, options), command);
  const status = await new Deno.Command(cmd, { args, stdin: "inherit", stdout: "inherit", stderr: "inherit" })
    .spawn().status;
  return status.signal ? 128 + signalNumber(status.signal) : status.code;
}

function signalNumber(signal: Deno.Signal): number {
  return ({ SIGINT: 2, SIGKILL: 9, SIGTERM: 15, SIGPIPE: 13 } as Record<string, number>)[signal] ?? 1;
}
