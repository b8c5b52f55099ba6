/**
 * `lab down`: removes everything lab `name` made, whether `lab up` finished, failed or crashed:
 * the processes in its namespaces, the namespaces (their veth pairs, bridge and iptables rules go
 * with them), the `/etc/netns/` folders, and the state directory. What to remove comes from the
 * state file and, because that may be partial or missing, from the names on the host
 * (`<name>_*` namespaces and /etc/netns entries).
 *
 * @module
 */
import { killNetnsProcesses, listNetns, mustRun } from "./host.ts";
import { belongsToLab, LAB_NAME_PATTERN } from "../../shared/internal/lab/naming.ts";
import { labPaths, loadState } from "../../shared/internal/lab/state.ts";

/** What {@link labDown} removed. */
export interface DownReport {
  processes: number;
  netns: string[];
  etcNetns: string[];
  stateDir: boolean;
  /** A state file that could not be read; the lab was cleaned up by name. */
  warnings: string[];
}

/**
 * Tears lab `name` down; a lab that does not exist is no error (nothing to remove).
 *
 * @throws Error for an invalid lab name, or when a namespace cannot be deleted
 */
export async function labDown(name: string, options: { dir?: string } = {}): Promise<DownReport> {
  if (!LAB_NAME_PATTERN.test(name)) throw new Error(`lab name ${JSON.stringify(name)} is not valid`);
  const paths = labPaths(name, options.dir);
  const warnings: string[] = [];
  const state = await loadState(paths);
  if (typeof state === "string") warnings.push(`${state}; finding the lab's namespaces by name`);
  const recorded = typeof state === "object" ? state : undefined;
  const labNetns = async (): Promise<string[]> => {
    const onHost = (await listNetns()).filter((n) => belongsToLab(n, name));
    // Workload namespaces before the hub, so that each veth pair goes with its workload's namespace.
    return [...new Set([...(recorded?.netns ?? []), ...onHost])]
      .filter((n) => onHost.includes(n))
      .sort((a, b) => Number(a === `${name}_hub`) - Number(b === `${name}_hub`));
  };
  const netns: string[] = [];
  let processes = 0;
  for (let round = 1;; round++) {
    const found = await labNetns();
    if (found.length === 0) break;
    // Again until a round finds no process: one being ended may start others first (the Kubernetes
    // lab's node agent, mid-pass when SIGTERM comes, starts a pod's processes and namespace). A
    // namespace deleted with a process inside leaves that process running, unreachable by name.
    const ended = await killNetnsProcesses(found, 1000);
    processes += ended;
    if (ended > 0 && round < MAX_ROUNDS) continue;
    for (const n of found) {
      await mustRun("ip", ["netns", "delete", n]);
      netns.push(n);
    }
    if (round >= MAX_ROUNDS) break;
  }
  const etcNetns = new Set(recorded?.etcNetns ?? []);
  try {
    for await (const e of Deno.readDir("/etc/netns")) {
      if (belongsToLab(e.name, name)) etcNetns.add(`/etc/netns/${e.name}`);
    }
  } catch {
    // no /etc/netns at all
  }
  const removedEtc: string[] = [];
  for (const dir of etcNetns) {
    if (await removeIfPresent(dir)) removedEtc.push(dir);
  }
  const stateDir = await removeIfPresent(paths.dir);
  return { processes, netns, etcNetns: removedEtc, stateDir, warnings };
}

/** Kill rounds before the namespaces are deleted whatever is left (a process that keeps starting others). */
const MAX_ROUNDS = 5;

async function removeIfPresent(path: string): Promise<boolean> {
  try {
    await Deno.remove(path, { recursive: true });
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
