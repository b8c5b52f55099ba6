/**
 * The kubelet part of the node agent: a pod's network namespace (veth on the lab's bridge, the pod
 * IP, a route for the Service range), its volumes as files (projected service-account tokens from
 * TokenRequest, ConfigMaps, Secrets, emptyDirs), bind-mounted at their `mountPath` inside the
 * container's own mount namespace (`ip netns exec` gives each process one), and its containers as
 * detached processes (images.ts says which program). Needs root.
 *
 * @module
 */
import { join } from "node:path";
import { Buffer } from "node:buffer";
import type { ApiClient } from "../../../shared/internal/kube/api_client.ts";
import { expandCommand } from "../../../shared/internal/lab/container_env.ts";
import { killNetnsProcesses, mustRun, run } from "../host.ts";
import { addJoinedNetns } from "../network.ts";
import { type ContainerRun, containerRun, type ContainerSpec } from "./images.ts";
import { containerEnvironment, type Obj, SERVICES_CHAIN } from "./desired.ts";

/** The Service cluster-IP range of the test API server (kube_api/objects.ts allocates from it). */
export const SERVICE_CIDR = "10.96.0.0/16";

/** What the agent needs to run pods. */
export interface NodeContext {
  api: ApiClient;
  lab: string;
  prefix: string;
  hub: string;
  node: string;
  /** Per-pod folders (volumes, logs). */
  dir: string;
  repoRoot: string;
  deno: string;
}

/** A pod the agent runs. */
export interface RunningPod {
  uid: string;
  namespace: string;
  name: string;
  netns: string;
  ip: string;
  index: number;
  sidecar: boolean;
  /** Processes of long-running containers, by container name. */
  pids: Map<string, number>;
  /** Container ports that must accept connections (on 127.0.0.1 with a sidecar, else the pod IP). */
  ports: number[];
  labels: Record<string, string>;
  serviceAccount: string;
  /** The last readiness reported. */
  ready: boolean;
  /** The shell script that exits 0 when the pod is ready (readiness_check in probes.ts). */
  readinessCheck: string;
  /** How often a ready pod is checked again, ms. */
  periodMs: number;
  /** When it was last checked (epoch ms). */
  checkedAt: number;
  /** Starts a long-running container again (restartPolicy), by name; returns the new pid. */
  restarters: Map<string, () => Promise<number>>;
  /** The projected service-account tokens, refreshed as the kubelet does. */
  tokens: ProjectedToken[];
  /** Restarts so far, by container name, and when the next may happen (epoch ms; the back-off). */
  restarts: Map<string, { count: number; notBefore: number }>;
}

/** Quotes one word for sh. */
function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Whether the pod carries the mesh's injected proxy (then applications bind 127.0.0.1). */
export function hasSidecar(pod: Obj): boolean {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return all.some((c: { name: string }) => c.name === "mesh-proxy" || c.name === "istio-proxy");
}

/** Resolves every container's program first, so that an unknown image is refused before anything is made. */
export function plannedRuns(pod: Obj, ctx: NodeContext): { init: ContainerRun[]; main: ContainerRun[] } {
  const bindIp = hasSidecar(pod) ? "127.0.0.1" : "0.0.0.0";
  const at = (c: ContainerSpec) => containerRun(c, { bindIp, deno: ctx.deno, repoRoot: ctx.repoRoot });
  return { init: (pod.spec?.initContainers ?? []).map(at), main: (pod.spec?.containers ?? []).map(at) };
}

/** Makes the pod's network namespace, joined to the lab's bridge. */
export async function createPodNetwork(p: RunningPod, ctx: NodeContext, hosts: string): Promise<void> {
  const link = `p${p.index}`;
  await run("ip", ["-n", ctx.hub, "link", "del", link]);
  await addJoinedNetns(ctx.hub, p.netns, link, p.ip);
  const etc = `/etc/netns/${p.netns}`;
  await Deno.mkdir(etc, { recursive: true });
  await Deno.writeTextFile(`${etc}/hosts`, hosts);
  await Deno.writeTextFile(
    `${etc}/resolv.conf`,
    "# lab node: names are in /etc/hosts\noptions attempts:1 timeout:1\n",
  );
  await routeClusterIps(p.netns);
}

/**
 * Lets a namespace reach cluster IPs: a route for the Service range (cluster IPs are not on the wire; the
 * route lets connect() reach the nat OUTPUT rules that rewrite them) and the DNAT chain, jumped to from OUTPUT.
 */
export async function routeClusterIps(netns: string): Promise<void> {
  await mustRun("ip", ["-n", netns, "route", "add", SERVICE_CIDR, "dev", "eth0"]);
  await mustRun("ip", ["netns", "exec", netns, "iptables", "-w", "-t", "nat", "-N", SERVICES_CHAIN]);
  await mustRun("ip", [
    "netns",
    "exec",
    netns,
    "iptables",
    "-w",
    "-t",
    "nat",
    "-A",
    "OUTPUT",
    "-j",
    SERVICES_CHAIN,
  ]);
}

/** Ends the pod's processes and removes its namespace and files. */
export async function removePod(p: RunningPod, ctx: NodeContext): Promise<void> {
  await killNetnsProcesses([p.netns], 2000);
  await run("ip", ["netns", "del", p.netns]);
  await Deno.remove(`/etc/netns/${p.netns}`, { recursive: true }).catch(() => {});
  await Deno.remove(podDir(ctx, p), { recursive: true }).catch(() => {});
}

function podDir(ctx: NodeContext, p: { namespace: string; name: string }): string {
  return join(ctx.dir, `${p.namespace}.${p.name}`);
}

async function readObject(ctx: NodeContext, path: string): Promise<Obj | undefined> {
  const r = await ctx.api.request("GET", path);
  if (r.status === 404) {
    await r.body?.cancel();
    return undefined;
  }
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${(await r.text()).slice(0, 200)}`);
  return await r.json();
}

/**
 * A volume whose source is not there yet (a ConfigMap, Secret or ServiceAccount the API may still get):
 * the kubelet keeps the pod in ContainerCreating and tries again, and so does the agent.
 */
export class VolumeNotReady extends Error {}

/** A projected service-account token from TokenRequest, bound to the pod (the kubelet's job). */
async function requestToken(
  ctx: NodeContext,
  pod: Obj,
  source: { audience?: string; expirationSeconds?: number },
): Promise<string> {
  const sa = pod.spec?.serviceAccountName ?? "default";
  const ns = pod.metadata.namespace;
  const tr = await ctx.api.json<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          audiences: source.audience ? [source.audience] : [],
          expirationSeconds: source.expirationSeconds ?? 3600,
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.metadata.name, uid: pod.metadata.uid },
        },
      },
    },
  ).catch((e: Error) => {
    throw new VolumeNotReady(`token for service account ${ns}/${sa}: ${e.message}`);
  });
  return tr.status.token;
}

/** A projected service-account token file and when to ask for a new one. */
export interface ProjectedToken {
  file: string;
  source: { audience?: string; expirationSeconds?: number };
  /** Epoch ms. */
  refreshAt: number;
}

/**
 * When the kubelet asks for a new projected token: at 80 % of its lifetime, or after 24 h, whichever is
 * first (kubelet's token manager).
 *
 * @param issuedAtMs epoch ms
 * @param expirationSeconds the token's lifetime
 */
export function tokenRefreshAt(issuedAtMs: number, expirationSeconds: number): number {
  return issuedAtMs + Math.min(0.8 * expirationSeconds * 1000, 24 * 3600_000);
}

/** Asks for the token and replaces the file at once (write, then rename in the same folder). */
export async function refreshToken(ctx: NodeContext, pod: Obj, t: ProjectedToken): Promise<void> {
  const issuedAt = Date.now();
  const token = await requestToken(ctx, pod, t.source);
  await Deno.writeTextFile(`${t.file}.new`, token, { mode: 0o600 });
  await Deno.rename(`${t.file}.new`, t.file);
  t.refreshAt = tokenRefreshAt(issuedAt, t.source.expirationSeconds ?? 3600);
}

/** Writes `data` (key → text) into `dir`, all keys or the listed items. */
async function writeKeys(
  dir: string,
  data: Record<string, string>,
  items?: { key: string; path: string }[],
): Promise<void> {
  for (const { key, path } of items ?? Object.keys(data).map((key) => ({ key, path: key }))) {
    if (!(key in data)) throw new Error(`key ${key} not found`);
    await Deno.mkdir(join(dir, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, path), data[key]);
  }
}

/**
 * Makes each volume's files under the pod's folder; returns the folder of each volume by name, or
 * undefined for an optional Secret or ConfigMap that is absent (nothing is mounted then).
 *
 * @throws Error naming the volume for a missing required source or an unsupported volume type
 */
export async function makeVolumes(
  pod: Obj,
  ctx: NodeContext,
  tokens?: ProjectedToken[],
): Promise<Map<string, string | undefined>> {
  const out = new Map<string, string | undefined>();
  const ns = pod.metadata.namespace;
  for (const v of pod.spec?.volumes ?? []) {
    const dir = join(podDir(ctx, { namespace: ns!, name: pod.metadata.name }), "volumes", v.name);
    await Deno.mkdir(dir, { recursive: true });
    const where = `volume ${v.name}`;
    const configMap = async (
      s: { name: string; items?: { key: string; path: string }[]; optional?: boolean },
    ) => {
      const cm = await readObject(ctx, `/api/v1/namespaces/${ns}/configmaps/${s.name}`);
      if (!cm) {
        if (s.optional) return false;
        throw new VolumeNotReady(`${where}: configmap "${s.name}" not found`);
      }
      await writeKeys(dir, cm.data ?? {}, s.items);
      return true;
    };
    const secret = async (
      s: { secretName?: string; name?: string; items?: { key: string; path: string }[]; optional?: boolean },
    ) => {
      const name = s.secretName ?? s.name ?? "";
      const sec = await readObject(ctx, `/api/v1/namespaces/${ns}/secrets/${name}`);
      if (!sec) {
        if (s.optional) return false;
        throw new VolumeNotReady(`${where}: secret "${name}" not found`);
      }
      const data = Object.fromEntries(
        Object.entries(sec.data ?? {}).map((
          [k, b],
        ) => [k, Buffer.from(String(b), "base64").toString()]),
      );
      await writeKeys(dir, data, s.items);
      return true;
    };
    if (v.emptyDir) out.set(v.name, dir);
    else if (v.configMap) out.set(v.name, (await configMap(v.configMap)) ? dir : undefined);
    else if (v.secret) out.set(v.name, (await secret(v.secret)) ? dir : undefined);
    else if (v.projected) {
      for (const s of v.projected.sources ?? []) {
        if (s.serviceAccountToken) {
          const token: ProjectedToken = {
            file: join(dir, s.serviceAccountToken.path),
            source: s.serviceAccountToken,
            refreshAt: 0,
          };
          await refreshToken(ctx, pod, token);
          tokens?.push(token);
        } else if (s.configMap) await configMap(s.configMap);
        else if (s.secret) await secret(s.secret);
        else {throw new Error(
            `${where}: projected source ${Object.keys(s).join(",")} is not served by the lab node`,
          );}
      }
      out.set(v.name, dir);
    } else {
      throw new Error(
        `${where}: type ${
          Object.keys(v).filter((k) => k !== "name").join(",")
        } is not served by the lab node`,
      );
    }
  }
  return out;
}

/** The shell lines that bind-mount a container's volumes (mount points under /run are made on the host, as a kubelet's). */
async function mountScript(
  c: { name: string; volumeMounts?: { name: string; mountPath: string }[] },
  volumes: Map<string, string | undefined>,
): Promise<string[]> {
  const lines: string[] = [];
  for (const m of c.volumeMounts ?? []) {
    const src = volumes.get(m.name);
    if (!volumes.has(m.name)) throw new Error(`container ${c.name}: volumeMount ${m.name}: no such volume`);
    if (src === undefined) continue;
    const target = m.mountPath.replace(/^\/var\/run\//, "/run/");
    if (target.startsWith("/run/")) await Deno.mkdir(target, { recursive: true });
    else {
      try {
        await Deno.stat(target);
      } catch {
        throw new Error(
          `container ${c.name}: volumeMount ${m.name}: ${m.mountPath} does not exist on the lab host (only paths under /run are made)`,
        );
      }
    }
    lines.push(`mount --bind ${q(src)} ${q(target)}`);
  }
  return lines;
}

/** The environment of every process: the host's (Deno's cache, PATH), without the grpc-js trap, plus the container's. */
function processEnv(extra: Record<string, string>): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.GRPC_DEFAULT_SSL_ROOTS_FILE_PATH;
  return { ...env, NO_COLOR: "1", ...extra };
}

/** Starts one container's process in the pod; returns its pid, or with `wait` its exit code. */
async function startProcess(
  p: RunningPod,
  ctx: NodeContext,
  pod: Obj,
  c: ContainerSpec & { env?: []; volumeMounts?: { name: string; mountPath: string }[] },
  argv: string[],
  volumes: Map<string, string | undefined>,
  wait: boolean,
): Promise<number> {
  const env = containerEnvironment(pod, c, p.ip, ctx.node);
  const mounts = await mountScript(c, volumes);
  const log = join(podDir(ctx, p), `${c.name}.log`);
  const script = [...mounts, `exec "$@" >>"$0" 2>&1 </dev/null`].join(" && ");
  const child = new Deno.Command("ip", {
    args: ["netns", "exec", p.netns, "sh", "-c", script, log, ...expandCommand(argv, env)],
    env: processEnv(env),
    clearEnv: true,
    cwd: ctx.repoRoot,
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: !wait,
  }).spawn();
  if (wait) return (await child.status).code;
  child.unref();
  child.status.catch(() => {});
  return child.pid;
}

/** The log folder of a pod's containers. */
export function podLogDir(ctx: NodeContext, p: { namespace: string; name: string }): string {
  return podDir(ctx, p);
}

/**
 * Runs the pod: volumes, init containers in order (the mesh's `mesh-init` runs its injected
 * iptables/ip6tables script in the pod's namespace; a native sidecar is started and left running),
 * then every container.
 *
 * @throws Error naming the container or volume that failed
 */
export async function startPod(
  p: RunningPod,
  ctx: NodeContext,
  pod: Obj,
  runs: { init: ContainerRun[]; main: ContainerRun[] },
): Promise<void> {
  await Deno.mkdir(podDir(ctx, p), { recursive: true });
  const volumes = await makeVolumes(pod, ctx, p.tokens);
  const inits = pod.spec?.initContainers ?? [];
  for (const [i, r] of runs.init.entries()) {
    const c = inits[i];
    if (r.kind === "process") {
      if (c.restartPolicy === "Always") {
        p.pids.set(c.name, await startProcess(p, ctx, pod, c, r.argv, volumes, false));
      } else {
        const code = await startProcess(p, ctx, pod, c, r.argv, volumes, true);
        if (code !== 0) throw new Error(`init container ${c.name} exited with code ${code}`);
      }
    }
  }
  const containers = pod.spec?.containers ?? [];
  for (const [i, r] of runs.main.entries()) {
    if (r.kind === "process") {
      const start = () => startProcess(p, ctx, pod, containers[i], r.argv, volumes, false);
      p.restarters.set(containers[i].name, start);
      p.pids.set(containers[i].name, await start());
    }
  }
}
