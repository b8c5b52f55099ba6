/**
 * meshd's Kubernetes side, started when the Kubernetes API is the config source (issue 14): one
 * rate-limited API client (--orchApiQPS, --orchApiBurst) shared by the config source and the
 * controllers that write to the API.
 *
 * @module
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { MeshdEnvironment } from "./options/environment.ts";
import type { DiscoveryOptions } from "./options/discovery_flags.ts";
import type { Logger } from "./logging/mod.ts";
import { DEFAULT_REGISTRY } from "./options/env/env_var.ts";
import { KubeSource } from "./kube_source/mod.ts";
import { loadKubeConfig } from "./kube_source/kube_config.ts";
import { ApiClient } from "./kube_source/api_client.ts";
import { KubeRegistry, type KubeRegistryHooks } from "./kube_registry/mod.ts";
import type { OrchMetrics } from "./monitoring/metrics.ts";

/**
 * The config source: --configDir when given, else the Kubernetes API when --registries names the
 * orchestrator (Kubernetes), from --kubeconfig or the in-cluster config.
 *
 * @param metrics the informers' metrics (disco_orch_*, controller_sync_errors_total); default none
 * @returns undefined for --configDir; else the config source, the service registry (meshd/kube_registry)
 *   and the connection to the API
 * @throws Error naming the flags when there is no source
 */
export function kubeConfigSource(
  options: DiscoveryOptions,
  env: MeshdEnvironment,
  rootNamespace: string,
  logger: Logger,
  metrics?: OrchMetrics,
): { feed: KubeSource; registry: KubeRegistry; kube: KubeConnection } | undefined {
  if (options.configDir !== "") {
    // The directory wins, as Istio's file config source does; what only the Kubernetes source reads says so.
    const log = logger.scope("default");
    if (options.kubeconfig !== "") log.warn("--kubeconfig has no effect: --configDir is the config source");
    if (env.MESH_WATCH_NAMESPACE) {
      log.warn("MESH_WATCH_NAMESPACE has no effect: --configDir is the config source");
    }
    return undefined;
  }
  if (!options.registries.includes(DEFAULT_REGISTRY)) {
    throw new Error(`no config source: no --configDir, and --registries does not name ${DEFAULT_REGISTRY}`);
  }
  const choice = loadKubeConfig(options.kubeconfig, Deno.env.toObject());
  if (!choice.ok) throw new Error(`no config source: ${choice.reason}`);
  const log = logger.scope("kube");
  const api = new ApiClient(choice.config, {
    rateLimit: { qps: options.orchApiQPS, burst: options.orchApiBurst },
  });
  const kube: KubeConnection = { config: choice.config, api, description: choice.description };
  const feed = new KubeSource({
    config: choice.config,
    api,
    description: choice.description +
      (env.MESH_WATCH_NAMESPACE ? `, namespace ${env.MESH_WATCH_NAMESPACE} only` : ""),
    namespace: env.MESH_WATCH_NAMESPACE,
    rootNamespace,
    logger: log,
    onEvent: (type, event) => metrics?.cfgEvents.inc({ type, event }),
    onFailure: () => metrics?.controllerSyncErrors.inc(),
  });
  return { feed, registry: kubeRegistry(kube, options, env, logger, metrics), kube };
}

/** The Kubernetes service registry on the shared client, reporting to the metrics. */
function kubeRegistry(
  kube: KubeConnection,
  options: DiscoveryOptions,
  env: MeshdEnvironment,
  logger: Logger,
  metrics: OrchMetrics | undefined,
): KubeRegistry {
  return new KubeRegistry({
    config: kube.config,
    api: kube.api,
    clusterID: options.clusterID,
    domain: options.domain,
    namespace: env.MESH_WATCH_NAMESPACE,
    logger: logger.scope("kube"),
    hooks: metrics && registryMetricHooks(metrics),
  });
}

/** The registry's observers that keep its metrics (disco_orch_reg_events, disco_no_ip, endpoint_no_pod…). */
export function registryMetricHooks(metrics: OrchMetrics): KubeRegistryHooks {
  return {
    onEvent: (type, event) => metrics.regEvents.inc({ type, event }),
    onFailure: () => metrics.controllerSyncErrors.inc(),
    onSnapshot: (counts, newlyPending) => {
      metrics.noIp.set(counts.noIp);
      metrics.endpointsPendingPod.set(counts.pending.length);
      metrics.endpointNoPod.set(counts.noPod);
      metrics.endpointsWithNoPods.inc(newlyPending);
    },
  };
}

/** The Kubernetes API meshd talks to, shared by everything that reads or writes it. */
export interface KubeConnection {
  config: KubeConfig;
  /** One rate-limited client (--orchApiQPS, --orchApiBurst) for every request. */
  api: ApiClient;
  description: string;
}

/** What {@link startKubeControl} started. */
export interface RunningKubeControl {
  /** Stops the controllers, then closes the API client. */
  stop(): Promise<void>;
}

/**
 * Starts the controllers that work through the Kubernetes API.
 *
 * @param kube the connection {@link kubeConfigSource} made
 * @param deps what the controllers use
 */
export function startKubeControl(kube: KubeConnection, deps: { logger: Logger }): RunningKubeControl {
  const stops: (() => Promise<void>)[] = [];
  deps.logger.scope("kube").info(`Kubernetes API: ${kube.description}`);
  return {
    stop: async () => {
      for (const s of stops) await s();
      await kube.api.close();
    },
  };
}
