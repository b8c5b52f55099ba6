/**
 * The lab node agent (`lab up --kubernetes` starts it; see README.md beside this file): plays the
 * kubelet, the scheduler, kube-proxy, DNS and the controllers of a one-node cluster against the test
 * API server, until SIGINT/SIGTERM. Needs root. It runs in meshd's network namespace (the API server
 * listens there) but in the host's mount namespace (`nsenter --net`), so that the network namespaces
 * it adds are seen by every other process.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { KubeConfig } from "@kubernetes/client-node";
import { ApiClient } from "../../../shared/internal/kube/api_client.ts";
import { labNames } from "../../../shared/internal/lab/naming.ts";
import { repoRoot } from "../../../shared/internal/lab/state.ts";
import { NodeAgent } from "./agent.ts";
import { routeClusterIps } from "./pod_runtime.ts";

const program = new Command("node-agent")
  .description("The lab's Kubernetes node: runs the pods scheduled to it (deploy/lab/node_agent/README.md)")
  .requiredOption("--kubeconfig <file>", "the test API server's kubeconfig")
  .requiredOption("--lab <name>", "the lab's name (prefix of the pods' network namespaces)")
  .requiredOption("--subnet <cidr>", "the lab's /24 (pods get .3 to .127)")
  .requiredOption("--dir <dir>", "where pods' volumes and logs go")
  .requiredOption("--pods-file <file>", "where the running pods are recorded for lab exec (node-pods.json)")
  .option("--node <name>", "the Node's name (default: <lab>-node)")
  .option("--interval-ms <ms>", "time between two passes over the API", "300");

program.parse();
const o = program.opts();
const lab = labNames(o.lab, o.subnet);
const config = new KubeConfig();
config.loadFromFile(o.kubeconfig);
const node = o.node ?? `${lab.name}-node`;
const api = new ApiClient(config);
const agent = new NodeAgent(
  {
    api,
    lab: lab.name,
    prefix: lab.prefix,
    hub: lab.hub,
    node,
    dir: o.dir,
    repoRoot: repoRoot(),
    deno: Deno.execPath(),
  },
  `${lab.prefix}.2`,
  lab.meshd,
  o.podsFile,
  (line) => console.log(`${new Date().toISOString()} ${line}`),
);
await api.request("POST", "/api/v1/nodes", {
  body: {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: node, labels: { "kubernetes.io/hostname": node } },
  },
}).then((r) => r.body?.cancel());
await routeClusterIps(lab.meshd);
let stopping = false;
const stop = (): void => {
  stopping = true;
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
console.log(`${new Date().toISOString()} node ${node}: ready`);
const interval = Number(o.intervalMs);
while (!stopping) {
  const started = Date.now();
  try {
    await agent.pass();
  } catch (e) {
    console.log(`${new Date().toISOString()} pass failed: ${(e as Error).message}`);
  }
  await new Promise((r) => setTimeout(r, Math.max(50, interval - (Date.now() - started))));
}
Deno.exit(0);
