/**
 * `lab up --kubernetes`: the lab as a one-node Kubernetes cluster. On top of `--config-source kube`
 * (the test API server, the CRDs, meshd with --kubeconfig), kubectl applies meshd's webhook
 * configurations (deploy/kubernetes/webhooks.yaml, unchanged; meshd's leader patches their caBundle) and
 * the Service `meshd` in mesh-system with an EndpointSlice naming meshd's address (port 443 → 15017, so
 * that the API server calls the injection webhook), and the node agent (node_agent/) starts.
 *
 * @module
 */
import { join } from "node:path";
import { stringify } from "yaml";
import { DENO_RUN_SERVER, isAlive, spawnDetached, waitInNetns } from "./host.ts";
import { labKubeconfig, mustKubectl } from "./kube_config.ts";
import type { LabPlan } from "../../shared/internal/lab/plan.ts";
import { nodePodsFile } from "../../shared/internal/lab/node_pods.ts";
import { type LabPaths, type LabProcess, repoRoot } from "../../shared/internal/lab/state.ts";

/** meshd's webhook configurations, as an operator applies them. */
export const WEBHOOKS_FILE = "deploy/kubernetes/webhooks.yaml";

/** The Service `meshd` of mesh-system without selector, and its EndpointSlice: meshd's lab address. */
export function meshdServiceYaml(plan: LabPlan): string {
  const ports = [
    { name: "https-webhook", port: 443, targetPort: 15017 },
    { name: "grpc-xds", port: 15010, targetPort: 15010 },
    { name: "https-dns", port: 15012, targetPort: 15012 },
  ];
  const svc = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "meshd", namespace: "mesh-system", labels: { app: "meshd" } },
    spec: { ports: ports.map((p) => ({ ...p, protocol: "TCP" })) },
  };
  const slice = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "meshd-lab",
      namespace: "mesh-system",
      labels: { "kubernetes.io/service-name": "meshd" },
    },
    addressType: "IPv4",
    ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: "TCP" })),
    endpoints: [{ addresses: [plan.meshd.address], conditions: { ready: true } }],
  };
  return `${stringify(svc)}---\n${stringify(slice)}`;
}

/** Applies the webhook configurations and meshd's Service with kubectl. */
export async function applyKubernetesObjects(plan: LabPlan, paths: LabPaths): Promise<void> {
  const netns = plan.meshd.netns;
  await mustKubectl(paths, netns, ["apply", "-f", join(repoRoot(), WEBHOOKS_FILE)]);
  await mustKubectl(paths, netns, ["apply", "-f", "-"], meshdServiceYaml(plan));
}

/**
 * Starts the node agent detached in meshd's network namespace and the host's mount namespace
 * (`nsenter --net`: network namespaces it adds must be visible to `lab down`), and waits for its Node.
 */
export async function startNodeAgent(
  plan: LabPlan,
  paths: LabPaths,
  timeoutMs: number,
): Promise<LabProcess> {
  const log = join(paths.logs, "node-agent.log");
  const argv = [
    `--net=/run/netns/${plan.meshd.netns}`,
    ...DENO_RUN_SERVER,
    "--allow-run",
    join(repoRoot(), "deploy/lab/node_agent/main.ts"),
    `--kubeconfig=${labKubeconfig(paths)}`,
    `--lab=${plan.lab.name}`,
    `--subnet=${plan.lab.subnet}`,
    `--dir=${join(paths.dir, "pods")}`,
    `--pods-file=${nodePodsFile(paths)}`,
  ];
  const env = Deno.env.toObject();
  delete env.GRPC_DEFAULT_SSL_ROOTS_FILE_PATH;
  const pid = spawnDetached(["nsenter", ...argv], { log, env: { ...env, NO_COLOR: "1" }, cwd: repoRoot() });
  const p: LabProcess = { role: "node-agent", netns: plan.meshd.netns, pid, log };
  await waitInNetns(plan.meshd.netns, ["grep", "-c", ": ready$", log], {
    timeoutMs,
    what: "node agent",
    alive: () => isAlive(p.pid),
  });
  return p;
}
