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
  const onHost = (await listNetns()).filter((n) => belongsToLab(n, name));
  // Workload namespaces before the hub, so that each veth pair goes with its workload's namespace.
  const netns = [...new Set([...(recorded?.netns ?? []), ...onHost])]
    .filter((n) => onHost.includes(n))
    .sort((a, b) => Number(a === `${name}_hub`) - Number(b === `${name}_hub`));
  const processes = await killNetnsProcesses(netns, 1000);
  for (const n of netns) await mustRun("ip", ["netns", "delete", n]);
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

async function removeIfPresent(path: string): Promise<boolean> {
  try {
    await Deno.remove(path, { recursive: true });
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
