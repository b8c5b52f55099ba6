/**
 * meshd's debug interface through the orchestrator (issue 15, item 1), as istioctl reaches istiod:
 * the first running pod labelled `app=meshd` (deploy/kubernetes/meshd.yaml; istioctl looks for
 * `app=istiod`) in `-i/--meshNamespace`, port-forwarded through the API server's pods/portforward
 * (./port_forward.ts) at the port of the pod's `--httpAddr` argument (meshd's default 8080).
 *
 * Chosen by the same rule as proxies' admin ports ({@link orchestratorChosen}: `-c/--orchconfig`,
 * `--context` or KUBECONFIG, and no `--lab`, `--debug-address` or `--xds-address`), and also not with
 * `--xds-label` or env MESHCTL_DEBUG_ADDRESS. The pod is looked up and the forward opened at the first
 * request, so a command that does not read meshd (e.g. `version --remote=false`) does not need one; the
 * forward is closed when the run ends (./run_end.ts).
 *
 * meshd serves its debug pages only with ENABLE_DEBUG_ON_HTTP=true, which deploy/kubernetes/meshd.yaml
 * does not set: an unreachable forward says so.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { HttpError, MeshdClient, type MeshdDebugSource } from "../meshd_client.ts";
import { type OrchClient, orchClient, orchFlags } from "./orch_client.ts";
import { openOrchPortForward } from "./port_forward.ts";
import { orchestratorChosen, root } from "./proxy_forward.ts";
import { onRunEnd } from "./run_end.ts";

/** The label of meshd's pods (deploy/kubernetes/meshd.yaml). */
export const MESHD_POD_LABEL = "app=meshd";

/** meshd's --httpAddr default port. */
export const MESHD_DEBUG_PORT = 8080;

/** The option key the hook sets: a factory of the source, by `--timeout` in ms. */
export const ORCH_MESHD_OPTION = "orchMeshdSource";

interface MeshdPodItem {
  metadata: { name: string };
  spec?: { containers?: { args?: string[]; command?: string[] }[] };
  status?: { podIP?: string; phase?: string };
}

/**
 * The port of `--httpAddr` in a pod's container arguments (`--httpAddr=h:p` or `--httpAddr h:p`),
 * else {@link MESHD_DEBUG_PORT}.
 */
export function debugPortOfPod(pod: Pick<MeshdPodItem, "spec">): number {
  for (const c of pod.spec?.containers ?? []) {
    const argv = [...(c.command ?? []), ...(c.args ?? [])];
    for (const [i, arg] of argv.entries()) {
      const value = arg.startsWith("--httpAddr=")
        ? arg.slice("--httpAddr=".length)
        : arg === "--httpAddr"
        ? argv[i + 1]
        : undefined;
      const port = Number(value?.slice(value.lastIndexOf(":") + 1));
      if (Number.isInteger(port) && port > 0 && port <= 65535) return port;
    }
  }
  return MESHD_DEBUG_PORT;
}

/**
 * The first running meshd pod of the mesh namespace (labelled {@link MESHD_POD_LABEL}, with an IP),
 * with its debug port.
 *
 * @throws Error naming the label, namespace and API server when there is none
 */
export async function runningMeshdPod(client: OrchClient): Promise<{ name: string; port: number }> {
  const ns = client.meshNamespace;
  const pods = await client.api.json<{ items: MeshdPodItem[] }>("GET", `/api/v1/namespaces/${ns}/pods`, {
    query: { labelSelector: MESHD_POD_LABEL },
  });
  const pod = pods.items.find((p) => p.status?.podIP && p.status.phase === "Running");
  if (!pod) {
    throw new Error(
      `no running meshd pod with label ${MESHD_POD_LABEL} in namespace ${ns} at ${client.description}`,
    );
  }
  return { name: pod.metadata.name, port: debugPortOfPod(pod) };
}

/** meshd's debug pages through a port-forward to its pod, opened at the first request. */
export class OrchMeshdSource implements MeshdDebugSource {
  #opened?: Promise<{ client: MeshdClient; where: string }>;
  #address?: string;

  /** @param cmd the running command (its flags name the kubeconfig); @param timeoutMs per request */
  constructor(readonly cmd: CommandUnknownOpts, readonly timeoutMs: number) {}

  /** The local end of the forward once open, else what is looked for. */
  get address(): string {
    return this.#address ?? `the meshd pod (${MESHD_POD_LABEL})`;
  }

  /** Where, for messages. */
  get description(): string {
    return `meshd's debug interface at ${this.address}`;
  }

  /** GETs a debug path and parses JSON. */
  async json<T>(path: string): Promise<T> {
    return JSON.parse(await this.text(path)) as T;
  }

  /** GETs a debug path as text. */
  text(path: string): Promise<string> {
    return this.#use((c) => c.text(path));
  }

  /** POSTs JSON to a debug path and parses the JSON answer. */
  post<T>(path: string, body: unknown): Promise<T> {
    return this.#use((c) => c.post<T>(path, body));
  }

  async #use<T>(request: (c: MeshdClient) => Promise<T>): Promise<T> {
    const { client, where } = await (this.#opened ??= this.#open());
    try {
      return await request(client);
    } catch (e) {
      if (!(e instanceof HttpError) || e.status !== 0) throw e;
      throw new HttpError(
        0,
        `${where}: ${e.message} (meshd serves its debug pages on --httpAddr only with ` +
          "ENABLE_DEBUG_ON_HTTP=true, which deploy/kubernetes/meshd.yaml does not set)",
      );
    }
  }

  async #open(): Promise<{ client: MeshdClient; where: string }> {
    const top = root(this.cmd);
    const orch = orchClient(orchFlags(this.cmd));
    try {
      const pod = await runningMeshdPod(orch);
      const forward = await openOrchPortForward(orch, orch.meshNamespace, pod.name, pod.port);
      onRunEnd(top, async () => {
        await forward.close();
        await orch.close();
      });
      this.#address = forward.localAddress;
      const where =
        `port-forward to pod ${orch.meshNamespace}/${pod.name}:${pod.port} through ${orch.description}`;
      return { client: new MeshdClient(forward.localAddress, this.timeoutMs), where };
    } catch (e) {
      await orch.close();
      throw e;
    }
  }
}

/** Whether `cmd` reads meshd through the orchestrator (see the module docs). */
export function meshdForwardChosen(
  cmd: CommandUnknownOpts,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): boolean {
  if (env.MESHCTL_DEBUG_ADDRESS || !orchestratorChosen(cmd, env)) return false;
  for (let c: CommandUnknownOpts | null = cmd; c; c = c.parent) {
    if (c.getOptionValueSource("xdsLabel") === "cli") return false;
  }
  return true;
}

/**
 * Adds the hook that gives commands with `--debug-address` the forwarded source when
 * {@link meshdForwardChosen}; debug_flags.ts `meshdClient` uses it.
 */
export function addOrchMeshdForward(program: CommandUnknownOpts): void {
  program.hook("preAction", (_top, action) => {
    if (!action.options.some((o) => o.attributeName() === "debugAddress")) return;
    if (!meshdForwardChosen(action)) return;
    const source = (timeoutMs: number): MeshdDebugSource => new OrchMeshdSource(action, timeoutMs);
    action.setOptionValueWithSource(ORCH_MESHD_OPTION, source, "env");
  });
}
