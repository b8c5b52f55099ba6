/**
 * The lab's Kubernetes config source (`lab up --config-source kube`): the test Kubernetes API server
 * (kube_api/) runs in meshd's network namespace on 127.0.0.1:6443, and everything meshd reads reaches
 * it only through the real kubectl: the mesh's CRDs (deploy/kubernetes/crds.yaml), the same 8 kinds
 * under Istio's groups (so that Istio's task YAML applies unchanged, as on a cluster with Istio's CRDs),
 * a Namespace per topology namespace and the root namespace, then the lab's generated config
 * (mesh_config.ts). meshd runs with `--kubeconfig` and no `--configDir`. kubectl runs inside meshd's
 * namespace (`ip netns exec`), the only place the server listens.
 *
 * @module
 */
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { DENO_RUN_SERVER, run, type RunResult } from "./host.ts";
import { GENERATED_CONFIG_FILE, meshConfigYaml } from "./mesh_config.ts";
import type { LabPlan } from "../../shared/internal/lab/plan.ts";
import { type LabPaths, labPaths, loadState, repoRoot } from "../../shared/internal/lab/state.ts";

/** The test API server's port in meshd's namespace (kube-apiserver's usual secure port). */
export const KUBE_API_PORT = 6443;

/** The mesh's CRDs, as an operator applies them. */
export const CRDS_FILE = "deploy/kubernetes/crds.yaml";

const ALIAS_GROUPS: Record<string, string> = {
  "security.mesh.io": "security.istio.io",
  "networking.mesh.io": "networking.istio.io",
};

/** The kubeconfig the lab's API server writes (its URL is https://127.0.0.1:6443, inside meshd's namespace). */
export function labKubeconfig(paths: LabPaths): string {
  return join(paths.kubeDir, "kubeconfig");
}

/** The command that runs the test API server for a lab (detached, in meshd's namespace). */
export function kubeApiArgv(paths: LabPaths): string[] {
  return [
    ...DENO_RUN_SERVER,
    join(repoRoot(), "deploy/lab/kube_api/main.ts"),
    `--port=${KUBE_API_PORT}`,
    "--host=127.0.0.1",
    `--dir=${paths.kubeDir}`,
  ];
}

/**
 * The mesh's CRDs renamed into Istio's groups (`security.istio.io`, `networking.istio.io`), standing in
 * for Istio's own CRDs: meshd reads those groups as aliases, as its file source does.
 *
 * @param crdsText the multi-document YAML of deploy/kubernetes/crds.yaml
 */
export function istioAliasCrds(crdsText: string): string {
  const out: string[] = [];
  for (const doc of parseAllDocuments(crdsText)) {
    const crd = doc.toJS() as {
      metadata: { name: string; labels?: Record<string, string> };
      spec: { group: string; names: { plural: string } };
    } | null;
    if (crd === null) continue;
    const group = ALIAS_GROUPS[crd.spec.group];
    if (group === undefined) {
      throw new Error(`${CRDS_FILE}: ${crd.metadata.name}: no Istio group for ${crd.spec.group}`);
    }
    crd.spec.group = group;
    crd.metadata.name = `${crd.spec.names.plural}.${group}`;
    out.push(stringify(crd));
  }
  return out.join("---\n");
}

/** A Namespace for every namespace of the topology and for the mesh's root namespace. */
export function namespacesYaml(plan: LabPlan): string {
  const root = plan.meshConfig?.rootNamespace;
  const names = new Set([
    ...plan.workloads.map((w) => w.namespace),
    typeof root === "string" ? root : "mesh-system",
  ]);
  return [...names].sort().map((name) =>
    stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } })
  )
    .join("---\n");
}

/** What the lab applies with kubectl after the CRDs, in order: its namespaces, then its generated config. */
export function labObjectsYaml(plan: LabPlan): string {
  return `${namespacesYaml(plan)}---\n${meshConfigYaml(plan)}`;
}

/**
 * Runs `kubectl --kubeconfig <lab's> <args>` inside meshd's namespace (the real kubectl on the PATH;
 * its discovery cache in the lab's state, since every lab's server is 127.0.0.1:6443 in its own namespace).
 */
export function kubectlInLab(
  paths: LabPaths,
  meshdNetns: string,
  args: string[],
  stdin?: string,
): Promise<RunResult> {
  return run("ip", [
    "netns",
    "exec",
    meshdNetns,
    "kubectl",
    `--kubeconfig=${labKubeconfig(paths)}`,
    `--cache-dir=${join(paths.kubeDir, "cache")}`,
    ...args,
  ], { stdin });
}

/** As {@link kubectlInLab}, throwing with kubectl's message when it fails; returns stdout. */
export async function mustKubectl(
  paths: LabPaths,
  meshdNetns: string,
  args: string[],
  stdin?: string,
): Promise<string> {
  const r = await kubectlInLab(paths, meshdNetns, args, stdin);
  if (r.code !== 0) {
    throw new Error(`kubectl ${args.join(" ")}: exit code ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}

/**
 * The roots meshd's leader publishes as the ConfigMap `mesh-ca-root-cert` in mesh-system (what injected
 * pods mount; meshd/namespace_controller), read with kubectl: with the Kubernetes source meshd shares its
 * root through the Secret `mesh-ca-secret` and keeps no self-signed root file in ROOT_CA_DIR.
 *
 * @throws naming the ConfigMap when it holds no certificate within `timeoutMs`
 */
export async function publishedRoots(
  paths: LabPaths,
  meshdNetns: string,
  timeoutMs = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await kubectlInLab(paths, meshdNetns, [
      ...["get", "configmap", "mesh-ca-root-cert", "-n", "mesh-system"],
      "-o",
      "jsonpath={.data.root-cert\\.pem}",
    ]);
    if (r.code === 0 && r.stdout.includes("-----BEGIN CERTIFICATE-----")) return r.stdout;
    if (Date.now() > deadline) {
      throw new Error(
        `meshd published no root in ConfigMap mesh-system/mesh-ca-root-cert within ${timeoutMs} ms: ${
          (r.stderr || r.stdout).trim() || "no certificate"
        }`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Applies, with kubectl only, what meshd reads: the CRDs and their Istio aliases, then the lab's namespaces
 * and generated config. The applied YAML is kept as `<kubeDir>/lab-generated.yaml` for inspection.
 */
export async function applyLabConfig(plan: LabPlan, paths: LabPaths): Promise<void> {
  const netns = plan.meshd.netns;
  const crds = join(repoRoot(), CRDS_FILE);
  await mustKubectl(paths, netns, ["apply", "-f", crds]);
  await mustKubectl(paths, netns, ["apply", "-f", "-"], istioAliasCrds(await Deno.readTextFile(crds)));
  const objects = join(paths.kubeDir, GENERATED_CONFIG_FILE);
  await Deno.writeTextFile(objects, labObjectsYaml(plan));
  await mustKubectl(paths, netns, ["apply", "-f", objects]);
}

/** The state of a lab whose config comes from its API server, or an Error saying why not. */
async function kubeLab(name: string, dir?: string): Promise<{ paths: LabPaths; netns: string }> {
  const paths = labPaths(name, dir);
  const state = await loadState(paths);
  if (state === undefined) throw new Error(`lab ${name} is not up (no ${paths.stateFile})`);
  if (typeof state === "string") throw new Error(state);
  if (state.configSource !== "kube" || state.plan === undefined) {
    throw new Error(`lab ${name} reads config files, not a Kubernetes API (lab up --config-source kube)`);
  }
  return { paths, netns: state.plan.meshd.netns };
}

/** Whether lab `name` takes its config from its Kubernetes API server. */
export async function isKubeLab(name: string, dir?: string): Promise<boolean> {
  const state = await loadState(labPaths(name, dir));
  return typeof state === "object" && state.configSource === "kube";
}

/** `lab kubectl`: kubectl against the lab's API server, with what it printed. */
export async function labKubectl(
  name: string,
  args: string[],
  options: { dir?: string; stdin?: string } = {},
): Promise<RunResult> {
  const { paths, netns } = await kubeLab(name, options.dir);
  return await kubectlInLab(paths, netns, args, options.stdin);
}

/** `kubectl apply -f` (or `delete -f`) of each file, in a lab with config from its API server; returns kubectl's lines. */
export async function kubectlFiles(
  name: string,
  verb: "apply" | "delete",
  files: string[],
  options: { dir?: string } = {},
): Promise<string[]> {
  const { paths, netns } = await kubeLab(name, options.dir);
  const lines: string[] = [];
  for (const file of files) {
    lines.push(...(await mustKubectl(paths, netns, [verb, "-f", file])).trim().split("\n"));
  }
  return lines;
}
