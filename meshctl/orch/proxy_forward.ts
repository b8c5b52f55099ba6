/**
 * A proxy's admin interface through the orchestrator, as istioctl's proxy-config and proxy-stats reach
 * Envoy's admin port: the target `[pod/]<name>[.<namespace>]` is a pod (namespace default: `-n`, else
 * the context's), and its `--proxy-admin-port` is port-forwarded through pods/portforward
 * (./port_forward.ts). meshd is not asked.
 *
 * Used only when the orchestrator is chosen explicitly: `-c/--orchconfig` or `--context` on the
 * command line, or KUBECONFIG set; and not with `--lab`, `--debug-address` or `--xds-address`, which
 * name meshd's registry as the way to the proxy (the behaviour before the orchestrator client).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { type ConnectedProxy, parseTarget } from "../proxy_target.ts";
import { orchClient, orchFlags } from "./orch_client.ts";
import { openOrchPortForward } from "./port_forward.ts";
import { onRunEnd } from "./run_end.ts";

/** The root command of `cmd`'s run. */
export function root(cmd: CommandUnknownOpts): CommandUnknownOpts {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c;
}

/** Whether this run reaches proxies through the orchestrator (see the module docs). */
export function orchestratorChosen(
  cmd: CommandUnknownOpts,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): boolean {
  const top = root(cmd);
  if ((top.opts() as { lab?: string }).lab) return false;
  for (let c: CommandUnknownOpts | null = cmd; c; c = c.parent) {
    if (c.getOptionValueSource("debugAddress") === "cli" || c.getOptionValueSource("xdsAddress") === "cli") {
      return false;
    }
  }
  return top.getOptionValueSource("orchconfig") === "cli" || top.getOptionValueSource("context") === "cli" ||
    !!env.KUBECONFIG;
}

/**
 * The local address forwarded to a target pod's admin port, and the proxy as meshctl names it.
 *
 * @throws Error naming the pod and the API server when the pod does not exist
 */
export async function orchProxyAdmin(
  cmd: CommandUnknownOpts,
  target: string,
  adminPort: number,
): Promise<{ address: string; proxy: ConnectedProxy; via: string }> {
  const client = orchClient(orchFlags(cmd));
  try {
    const t = parseTarget(target, client.namespace);
    await client.api.json("GET", `/api/v1/namespaces/${t.namespace}/pods/${t.name}`).catch((e: Error) => {
      throw new Error(`proxy ${target}: pod ${t.namespace}/${t.name} at ${client.description}: ${e.message}`);
    });
    const forward = await openOrchPortForward(client, t.namespace, t.name, adminPort);
    onRunEnd(root(cmd), async () => {
      await forward.close();
      await client.close();
    });
    return {
      address: forward.localAddress,
      proxy: {
        connection: "",
        proxy: `${t.name}.${t.namespace}`,
        workload: `${t.namespace}/${t.name}`,
        metadata: {},
      },
      via: `port-forward to pod ${t.namespace}/${t.name}:${adminPort} through ${client.description}`,
    };
  } catch (e) {
    await client.close();
    throw e;
  }
}
