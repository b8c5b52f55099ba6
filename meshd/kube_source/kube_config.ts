/**
 * Which Kubernetes API meshd talks to (meshd seed, `--kubeconfig`: "Use an orchestrator config file
 * instead of in-cluster config"): the kubeconfig file's current context when `--kubeconfig` is given,
 * else the in-cluster config (the service account's token and CA under
 * /var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST and _PORT), as client-go and
 * @kubernetes/client-node load them.
 *
 * @module
 */
import { KubeConfig } from "@kubernetes/client-node";

/** Where meshd's API server is, or why there is none. */
export type KubeConfigChoice =
  | { ok: true; config: KubeConfig; description: string }
  | { ok: false; reason: string };

/**
 * Loads the client configuration.
 *
 * @param kubeconfig `--kubeconfig`; empty for in-cluster
 * @param env the process environment (KUBERNETES_SERVICE_HOST tells that meshd runs in a pod)
 * @returns the config and `the Kubernetes API at <server> (<source>)`, or why none could be loaded
 */
export function loadKubeConfig(
  kubeconfig: string,
  env: Record<string, string | undefined>,
): KubeConfigChoice {
  const config = new KubeConfig();
  let source: string;
  try {
    if (kubeconfig !== "") {
      config.loadFromFile(kubeconfig);
      source = `--kubeconfig ${kubeconfig}, context ${config.getCurrentContext() || "(none)"}`;
    } else if (env.KUBERNETES_SERVICE_HOST) {
      config.loadFromCluster();
      source = "in-cluster config";
    } else {
      return { ok: false, reason: "no --kubeconfig and not in a cluster (KUBERNETES_SERVICE_HOST unset)" };
    }
  } catch (e) {
    return { ok: false, reason: `${kubeconfig || "in-cluster config"}: ${(e as Error).message}` };
  }
  const server = config.getCurrentCluster()?.server;
  if (!server) {
    return {
      ok: false,
      reason: `${kubeconfig || "in-cluster config"}: the current context names no cluster server`,
    };
  }
  return { ok: true, config, description: `the Kubernetes API at ${server} (${source})` };
}
