/**
 * The lab's state directory, `.lab/<name>/` in the repository (or MESH_LAB_DIR/<name>): meshd's
 * config directory and CA, the workloads' tokens, every process's log, and `state.json`, which
 * records what the lab made *before* it makes it, so that `lab down` after a crash of the lab
 * command knows at least as much as was made.
 *
 * @module
 */
import { join } from "node:path";
import type { LabPlan } from "./plan.ts";

/** One process the lab started. */
export interface LabProcess {
  /** `meshd`, `<ns>/<workload>` (a command, or a gateway's proxy) or `<ns>/<workload>/sidecar`. */
  role: string;
  netns: string;
  pid: number;
  log: string;
}

/** What `state.json` holds. */
export interface LabState {
  name: string;
  subnet: string;
  topologyFile: string;
  createdAt: string;
  /** `creating` until every process is ready, then `up`. */
  phase: "creating" | "up";
  plan?: LabPlan;
  /** Network namespaces, in creation order (each recorded before it is made). */
  netns: string[];
  /** `/etc/netns/<netns>` folders (each recorded before it is made). */
  etcNetns: string[];
  processes: LabProcess[];
  /**
   * Where meshd reads its config: `files` (absent in older states) is `--configDir`; `kube` is the test
   * Kubernetes API server in meshd's namespace (deploy/lab/kube_api), written only with kubectl.
   */
  configSource?: LabConfigSource;
}

/** The lab's config sources (deploy/lab/README.md, "Config from the Kubernetes API"). */
export type LabConfigSource = "files" | "kube";

/** The places in a lab's state directory. */
export interface LabPaths {
  dir: string;
  stateFile: string;
  configDir: string;
  caDir: string;
  rootCert: string;
  tokens: string;
  logs: string;
  /** The test Kubernetes API server's state (kubeconfig, ca.crt, token) and what the lab applied. */
  kubeDir: string;
}

const REPO_ROOT = new URL("../../../", import.meta.url).pathname;

/** The repository root (where deno.json is): the working directory of every process the lab starts. */
export function repoRoot(): string {
  return REPO_ROOT;
}

/** The folder holding every lab's state directory: MESH_LAB_DIR, else `<repo>/.lab`. */
export function labsDir(): string {
  return Deno.env.get("MESH_LAB_DIR") || join(REPO_ROOT, ".lab");
}

/** The places of lab `name`. */
export function labPaths(name: string, base: string = labsDir()): LabPaths {
  const dir = join(base, name);
  return {
    dir,
    stateFile: join(dir, "state.json"),
    configDir: join(dir, "config"),
    caDir: join(dir, "ca"),
    rootCert: join(dir, "root-cert.pem"),
    tokens: join(dir, "tokens"),
    logs: join(dir, "logs"),
    kubeDir: join(dir, "kube"),
  };
}

/** Writes the state atomically (a crash leaves the old or the new file, never half of one). */
export async function saveState(paths: LabPaths, state: LabState): Promise<void> {
  const tmp = `${paths.stateFile}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(state, null, 2) + "\n");
  await Deno.rename(tmp, paths.stateFile);
}

/**
 * Reads the state.
 *
 * @returns the state, undefined when there is none, or an error text when the file is unreadable
 *   or not a lab state (then `lab down` falls back to finding the lab's things by name)
 */
export async function loadState(paths: LabPaths): Promise<LabState | undefined | string> {
  let text: string;
  try {
    text = await Deno.readTextFile(paths.stateFile);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return `${paths.stateFile}: cannot read: ${(e as Error).message}`;
  }
  try {
    const s = JSON.parse(text) as LabState;
    if (typeof s.name !== "string" || !Array.isArray(s.netns) || !Array.isArray(s.processes)) {
      return `${paths.stateFile}: not a lab state (name, netns or processes missing)`;
    }
    return { ...s, etcNetns: Array.isArray(s.etcNetns) ? s.etcNetns : [] };
  } catch (e) {
    return `${paths.stateFile}: not JSON: ${(e as Error).message}`;
  }
}
