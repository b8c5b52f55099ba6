/**
 * The orchestrator connection of the diagnose commands (`analyze` on a cluster, `x check-inject`,
 * `x describe`, `x precheck`): the kubeconfig of `-c/--orchconfig`, else env KUBECONFIG, else
 * `~/.kube/config`, with `--context` chosen, through @kubernetes/client-node's KubeConfig, and the
 * shared {@link ApiClient} over it. A stand-in until orchclient's meshctl/orch/ lands (issue 15,
 * item 1); impersonation (`--as*`) is not applied here.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { KubeConfig } from "@kubernetes/client-node";
import { ApiClient } from "../../shared/internal/kube/api_client.ts";

/** A connection to one cluster. */
export interface Cluster {
  api: ApiClient;
  /** The current context's name, for messages. */
  context: string;
  /** The context's namespace, or `default`. */
  defaultNamespace: string;
  /** Closes the HTTP client. */
  close(): Promise<void>;
}

function flag(command: CommandUnknownOpts, key: string): string | undefined {
  const v: unknown = command.optsWithGlobals()[key];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Whether the user named an orchestrator config: `-c`, `--context` or env KUBECONFIG. */
export function orchestratorNamed(command: CommandUnknownOpts): boolean {
  return flag(command, "orchconfig") !== undefined || flag(command, "context") !== undefined ||
    !!Deno.env.get("KUBECONFIG");
}

/**
 * Loads the kubeconfig and opens a client.
 *
 * @throws Error naming the file or context when the kubeconfig cannot be read or has no such context
 */
export function connectCluster(command: CommandUnknownOpts): Cluster {
  const config = new KubeConfig();
  const file = flag(command, "orchconfig");
  try {
    if (file) config.loadFromFile(file);
    else config.loadFromDefault();
  } catch (e) {
    throw new Error(`--orchconfig ${file ?? "(default)"}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const context = flag(command, "context");
  if (context) {
    if (!config.getContextObject(context)) {
      throw new Error(`--context: no context "${context}" in ${file ?? "the kubeconfig"}`);
    }
    config.setCurrentContext(context);
  }
  if (!config.getCurrentCluster()) {
    throw new Error(`the kubeconfig ${file ?? "(default)"} has no current cluster; give -c or --context`);
  }
  const api = new ApiClient(config);
  const current = config.getCurrentContext();
  return {
    api,
    context: current,
    defaultNamespace: config.getContextObject(current)?.namespace ?? "default",
    close: () => api.close(),
  };
}
