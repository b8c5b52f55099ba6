/**
 * `lab up`: validates the topology, makes the network (network.ts), writes the mesh config, starts
 * meshd in its namespace, then every workload's command and, in injected namespaces, its sidecar,
 * and every gateway's proxy (`--type router`), and waits until all are ready. On failure it tears down what it made (unless asked to keep it)
 * and reports the failing process's log. With `configSource: "kube"` the config goes to the test
 * Kubernetes API server instead, through kubectl only (kube_config.ts), and meshd reads it with --kubeconfig.
 *
 * @module
 */
import { join } from "node:path";
import { stringify } from "yaml";
import { BootstrapTokenIssuer } from "../../shared/internal/ca/bootstrap_tokens.ts";
import { SELF_SIGNED_CERT_FILE } from "../../meshd/ca/root_ca.ts";
import { containerEnv, expandCommand } from "../../shared/internal/lab/container_env.ts";
import { labDown } from "./down.ts";
import {
  DENO_RUN_SERVER,
  isAlive,
  labUnavailable,
  listNetns,
  run,
  spawnInNetns,
  waitInNetns,
} from "./host.ts";
import { GENERATED_CONFIG_FILE, meshConfigYaml } from "./mesh_config.ts";
import { applyLabConfig, KUBE_API_PORT, kubeApiArgv, labKubeconfig, publishedRoots } from "./kube_config.ts";
import { applyKubernetesObjects, startNodeAgent } from "./kube_node.ts";
import { belongsToLab, labNames } from "../../shared/internal/lab/naming.ts";
import { createNetwork } from "./network.ts";
import {
  type LabPlan,
  MESHD_HOST,
  planLab,
  type PlannedWorkload,
  SIDECAR_ADMIN_PORT,
  SIDECAR_OUTBOUND_PORT,
} from "../../shared/internal/lab/plan.ts";
import {
  type LabConfigSource,
  type LabPaths,
  labPaths,
  type LabProcess,
  type LabState,
  repoRoot,
  saveState,
} from "../../shared/internal/lab/state.ts";
import { parseTopology } from "../../shared/internal/lab/topology.ts";
import { PROXY_RUN_FLAGS } from "../../shared/internal/proxy_permissions.ts";
import { PROXY_GID } from "../../shared/internal/lab/redirect.ts";

/** Options of {@link labUp}. */
export interface LabUpOptions {
  name: string;
  subnet: string;
  /** Where state directories live; default {@link labsDir}. */
  dir?: string;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Keep what was made when start-up fails (for debugging); default false. */
  keepOnFailure?: boolean;
  /** How long each process may take to become ready; default 30 s. */
  readyTimeoutMs?: number;
  /** `files` (default): meshd's --configDir; `kube`: the test Kubernetes API server, written with kubectl. */
  configSource?: LabConfigSource;
  /** The lab as a Kubernetes node (kube_node.ts): implies `configSource: "kube"`. */
  kubernetes?: boolean;
}

const DENO = Deno.execPath();
const MESHD_MONITORING = "127.0.0.1:15014";

/** The environment of every process the lab starts (the grpc-js trap of platform.md removed). */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.GRPC_DEFAULT_SSL_ROOTS_FILE_PATH;
  return { ...env, NO_COLOR: "1", ...extra };
}

/**
 * Brings a lab up.
 *
 * @param topologyFile the topology YAML (see the lab README)
 * @throws Error when the lab cannot run here, the topology is invalid (TopologyError), a lab of
 *   that name exists, or a process does not become ready
 */
export async function labUp(topologyFile: string, options: LabUpOptions): Promise<LabState> {
  const unavailable = labUnavailable();
  if (unavailable) throw new Error(unavailable);
  if (options.kubernetes) options = { ...options, configSource: "kube" };
  if (options.configSource === "kube") {
    const kubectl = await run("kubectl", ["version", "--client"]).catch((e: Error) => e.message);
    if (typeof kubectl === "string" || kubectl.code !== 0) {
      throw new Error(
        "--config-source kube needs kubectl on the PATH (./dev lab installs Debian's kubernetes-client)",
      );
    }
  }
  const lab = labNames(options.name, options.subnet);
  const topology = parseTopology(await Deno.readTextFile(topologyFile), topologyFile);
  const paths = labPaths(lab.name, options.dir);
  const leftovers = (await listNetns()).filter((n) => belongsToLab(n, lab.name));
  let exists = leftovers.length > 0;
  try {
    await Deno.stat(paths.dir);
    exists = true;
  } catch {
    // no state directory: good
  }
  if (exists) {
    throw new Error(
      `lab ${lab.name} exists (${paths.dir}${
        leftovers.length ? `, namespaces ${leftovers.join(", ")}` : ""
      }); ` +
        `run: lab down --name ${lab.name}`,
    );
  }
  const plan = planLab(lab, topology);
  const log = options.log ?? (() => {});
  const source = options.configSource ?? "files";
  for (
    const d of [source === "kube" ? paths.kubeDir : paths.configDir, paths.caDir, paths.tokens, paths.logs]
  ) {
    await Deno.mkdir(d, { recursive: true });
  }
  const state: LabState = {
    name: lab.name,
    subnet: lab.subnet,
    topologyFile,
    createdAt: new Date().toISOString(),
    phase: "creating",
    plan,
    netns: [],
    etcNetns: [],
    processes: [],
    configSource: source,
  };
  const save = () => saveState(paths, state);
  await save();
  const started = Date.now();
  try {
    await createNetwork(plan, {
      netns: async (n) => void (state.netns.push(n), await save()),
      etcNetns: async (p) => void (state.etcNetns.push(p), await save()),
    });
    log(`network: ${plan.workloads.length + 2} namespaces on ${lab.subnet} (${Date.now() - started} ms)`);
    if (source === "kube") {
      await startKubeApi(plan, paths, state, options);
      log(
        `kube-api: https://127.0.0.1:${KUBE_API_PORT} in ${plan.meshd.netns}, config applied with kubectl (${
          Date.now() - started
        } ms)`,
      );
    } else await Deno.writeTextFile(join(paths.configDir, GENERATED_CONFIG_FILE), meshConfigYaml(plan));
    await startMeshd(plan, paths, state, options);
    log(`meshd: ready at ${plan.meshd.address} (${Date.now() - started} ms)`);
    if (options.kubernetes) {
      state.processes.push(await startNodeAgent(plan, paths, options.readyTimeoutMs ?? 30_000));
      await save();
      log(`node agent: node ${lab.name}-node ready (${Date.now() - started} ms)`);
    }
    const issuer = await BootstrapTokenIssuer.open(paths.caDir, { audiences: ["mesh-ca"], create: false });
    const waits: Promise<unknown>[] = [];
    for (const w of plan.workloads) {
      if (!w.gateway) {
        const env = containerEnv(w);
        const app = start(
          state,
          paths,
          w.netns,
          `${w.namespace}/${w.name}`,
          expandCommand(w.command, env),
          env,
        );
        waits.push(waitForPorts(w, app, options.readyTimeoutMs));
      }
      if (w.sidecar || w.gateway) {
        const tokenFile = join(paths.tokens, `${w.namespace}.${w.name}.token`);
        const token = await issuer.issue({
          namespace: w.namespace,
          serviceAccount: w.serviceAccount,
          durationSeconds: 86400,
        });
        await Deno.writeTextFile(tokenFile, token.token, { mode: 0o600 });
        const role = w.gateway ? `${w.namespace}/${w.name}` : `${w.namespace}/${w.name}/sidecar`;
        const proxy = start(state, paths, w.netns, role, proxyArgv(plan, paths, w, tokenFile));
        waits.push(waitForProxy(w, proxy, options.readyTimeoutMs));
      }
    }
    await save();
    await Promise.all(waits);
    state.phase = "up";
    await save();
    log(
      `workloads: ${plan.workloads.length} ready, ${
        plan.workloads.filter((w) => w.sidecar).length
      } with sidecars, ${plan.workloads.filter((w) => w.gateway).length} gateways (${
        Date.now() - started
      } ms)`,
    );
    return state;
  } catch (e) {
    const tails = await logTails(state);
    if (!options.keepOnFailure) await labDown(lab.name, { dir: options.dir });
    throw new Error(`lab up failed: ${(e as Error).message}${tails}`);
  }
}

function start(
  state: LabState,
  paths: LabPaths,
  netns: string,
  role: string,
  argv: string[],
  extraEnv: Record<string, string> = {},
): LabProcess {
  const log = join(paths.logs, `${role.replaceAll("/", ".")}.log`);
  const pid = spawnInNetns(netns, argv, { log, env: childEnv(extraEnv), cwd: repoRoot() });
  const p = { role, netns, pid, log };
  state.processes.push(p);
  return p;
}

/** The test API server in meshd's namespace; then the CRDs and the lab's config, through kubectl only. */
async function startKubeApi(
  plan: LabPlan,
  paths: LabPaths,
  state: LabState,
  options: LabUpOptions,
): Promise<void> {
  const p = start(state, paths, plan.meshd.netns, "kube-api", kubeApiArgv(paths));
  await saveState(paths, state);
  // The server answers before it writes its kubeconfig: wait for both.
  const ready = `test -s ${
    labKubeconfig(paths)
  } && curl -sk --max-time 1 https://127.0.0.1:${KUBE_API_PORT}/readyz`;
  await waitInNetns(plan.meshd.netns, ["bash", "-c", ready], {
    timeoutMs: options.readyTimeoutMs ?? 30_000,
    what: "kube-api",
    accept: (s) => s === "ok",
    alive: () => isAlive(p.pid),
  });
  await applyLabConfig(plan, paths);
  if (options.kubernetes) await applyKubernetesObjects(plan, paths);
}

/** Writes the topology's meshConfig beside the lab's state; returns the file's path. */
async function writeMeshConfig(paths: LabPaths, meshConfig: Record<string, unknown>): Promise<string> {
  const file = join(paths.dir, "mesh-config.yaml");
  await Deno.writeTextFile(file, stringify(meshConfig));
  return file;
}

async function startMeshd(
  plan: LabPlan,
  paths: LabPaths,
  state: LabState,
  options: LabUpOptions,
): Promise<void> {
  const a = plan.meshd.address;
  const p = start(state, paths, plan.meshd.netns, "meshd", [
    ...DENO_RUN_SERVER,
    // meshd runs its serving children (meshd/server/serving) with its own Deno.
    `--allow-run=${DENO}`,
    join(repoRoot(), "meshd/main.ts"),
    "discovery",
    ...(state.configSource === "kube"
      ? [`--kubeconfig=${labKubeconfig(paths)}`]
      : [`--configDir=${paths.configDir}`]),
    `--grpcAddr=${a}:15010`,
    `--secureGRPCAddr=${a}:15012`,
    `--monitoringAddr=${MESHD_MONITORING}`,
    ...(plan.meshConfig === undefined
      ? []
      : [`--meshConfig=${await writeMeshConfig(paths, plan.meshConfig)}`]),
  ], { ROOT_CA_DIR: paths.caDir, POD_NAMESPACE: "mesh-system" });
  await saveState(paths, state);
  await waitInNetns(plan.meshd.netns, httpStatus(`http://${MESHD_MONITORING}/ready`), {
    timeoutMs: options.readyTimeoutMs ?? 30_000,
    what: "meshd",
    accept: (s) => s === "200",
    alive: () => isAlive(p.pid),
  });
  if (state.configSource === "kube") {
    await Deno.writeTextFile(paths.rootCert, await publishedRoots(paths, plan.meshd.netns));
  } else await Deno.copyFile(join(paths.caDir, SELF_SIGNED_CERT_FILE), paths.rootCert);
}

/** A sidecar, or for a gateway workload the ingress gateway (`--type router`, listeners from Gateways). */
function proxyArgv(plan: LabPlan, paths: LabPaths, w: PlannedWorkload, tokenFile: string): string[] {
  const dataPlane = w.gateway ? ["--type=router"] : [
    ...w.containerPorts.map((p) => `--inbound=${p}=127.0.0.1:${p}`),
    `--outbound=127.0.0.1:${SIDECAR_OUTBOUND_PORT}`,
  ];
  return [
    // The capture rules leave the proxy's own connections alone by its gid (Istio's --gid-owner 1337);
    // it keeps uid root, so it reads the lab's files (token, roots, Deno's cache under /root) as before.
    ...(w.gateway ? [] : ["setpriv", `--regid=${PROXY_GID}`, "--clear-groups"]),
    DENO,
    "run",
    ...PROXY_RUN_FLAGS,
    join(repoRoot(), "proxy/main.ts"),
    `--discoveryAddress=${plan.meshd.address}:15012`,
    `--discoveryServerName=${MESHD_HOST}`,
    `--rootCertFile=${paths.rootCert}`,
    `--tokenFile=${tokenFile}`,
    `--namespace=${w.namespace}`,
    `--serviceAccount=${w.serviceAccount}`,
    `--workloadGroup=${w.name}`,
    `--labels=${Object.entries(w.labels).map(([k, v]) => `${k}=${v}`).join(",")}`,
    `--address=${w.address}`,
    ...dataPlane,
    `--proxy-admin-port=${SIDECAR_ADMIN_PORT}`,
    "--concurrency=1",
  ];
}

function httpStatus(url: string): string[] {
  return ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1", url];
}

/** Ready when the proxy's /ready is 200; a gateway's listeners come later, with its Gateways. */
function waitForProxy(w: PlannedWorkload, p: LabProcess, timeoutMs = 30_000): Promise<number> {
  return waitInNetns(w.netns, httpStatus(`http://127.0.0.1:${SIDECAR_ADMIN_PORT}/ready`), {
    timeoutMs,
    what: w.gateway ? `gateway ${w.namespace}/${w.name}` : `sidecar of ${w.namespace}/${w.name}`,
    accept: (s) => s === "200",
    alive: () => isAlive(p.pid),
  });
}

/** Ready when every container port accepts a connection where the application binds. */
async function waitForPorts(w: PlannedWorkload, p: LabProcess, timeoutMs = 30_000): Promise<number> {
  const host = w.sidecar ? "127.0.0.1" : w.address;
  const script = w.containerPorts.map((port) => `(exec 3<>/dev/tcp/${host}/${port}) 2>/dev/null || exit 1`);
  if (script.length === 0) {
    await new Promise((r) => setTimeout(r, 200));
    if (!(await isAlive(p.pid))) throw new Error(`${w.namespace}/${w.name}: the process exited`);
    return 0;
  }
  return await waitInNetns(w.netns, ["bash", "-c", script.join("\n")], {
    timeoutMs,
    what: `${w.namespace}/${w.name} (ports ${w.containerPorts.join(", ")} on ${host})`,
    alive: () => isAlive(p.pid),
  });
}

async function logTails(state: LabState): Promise<string> {
  const out: string[] = [];
  const living = await Promise.all(state.processes.map((p) => isAlive(p.pid)));
  const dead = state.processes.filter((_, i) => !living[i]);
  for (const p of dead.length > 0 ? dead : state.processes) {
    try {
      const text = (await Deno.readTextFile(p.log)).trimEnd().split("\n").slice(-15).join("\n  ");
      out.push(`\n${p.role}${dead.includes(p) ? " exited" : ""}; the end of ${p.log}:\n  ${text}`);
    } catch {
      out.push(`\n${p.role} exited; no log at ${p.log}`);
    }
  }
  return out.join("");
}
