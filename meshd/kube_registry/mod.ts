/**
 * The Kubernetes service registry (issue 14, item 1; istiod's serviceregistry/kube controller): one
 * informer (meshd/kube_source/informer.ts, over the shared rate-limited ApiClient) each for
 * Namespaces, Services, EndpointSlices (discovery.k8s.io/v1), Pods and ServiceAccounts, in
 * MESH_WATCH_NAMESPACE only when it is set (Namespaces are listed cluster-wide, only that one kept).
 * Events within `coalesceMs` make one change; each change builds one immutable
 * {@link RegistrySnapshot} (convert.ts) that the discovery server adds to the push context.
 *
 * `start` resolves when every type was listed once, so that the first push context already has the
 * cluster's services: a proxy is never told a partial view.
 *
 * @module
 */
import type {
  KubeConfig,
  KubernetesObject,
  V1EndpointSlice,
  V1Namespace,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import type { ApiClient } from "../kube_source/api_client.ts";
import { Informer, type InformerEvent, type InformerLogger } from "../kube_source/informer.ts";
import type { RegistrySnapshot, ServiceRegistry } from "../push_context/registry_services.ts";
import { type ConvertCounts, NETWORK_LABEL, podWorkloads, registryServices } from "./convert.ts";

/** The types watched: `[kind, collection path without namespace]`. */
const WATCHED = [
  ["Namespace", "/api/v1/namespaces"],
  ["Service", "/api/v1/services"],
  ["EndpointSlice", "/apis/discovery.k8s.io/v1/endpointslices"],
  ["Pod", "/api/v1/pods"],
  ["ServiceAccount", "/api/v1/serviceaccounts"],
] as const;

type Kind = typeof WATCHED[number][0];

/** Namespace labels that choose injection (shown on the debug page). */
const INJECTION_LABELS = ["mesh-injection", "istio-injection", "mesh.io/rev", "istio.io/rev"];

/** What the registry reports (meshd's metrics). */
export interface KubeRegistryHooks {
  /** Each informer event (disco_orch_reg_events). */
  onEvent?(kind: Kind, event: InformerEvent): void;
  /** A list or watch failed and is retried (controller_sync_errors_total). */
  onFailure?(kind: Kind): void;
  /**
   * Each snapshot's counts (disco_no_ip, endpoint_no_pod, disco_orch_endpoints_pending_pod), and the
   * endpoints newly found without their pod (disco_orch_endpoints_with_no_pods).
   */
  onSnapshot?(counts: ConvertCounts, newlyPending: number): void;
}

/** Options of {@link KubeRegistry}. */
export interface KubeRegistryOptions {
  config: KubeConfig;
  /** The shared client (not closed by stop). */
  api: ApiClient;
  /** --clusterID. */
  clusterID: string;
  /** --domain; default cluster.local. */
  domain?: string;
  /** MESH_WATCH_NAMESPACE; default every namespace. */
  namespace?: string;
  /** How long events are gathered into one change, ms; default 20. */
  coalesceMs?: number;
  /** The first retry delay, ms; default 1000. */
  retryMs?: number;
  logger?: InformerLogger;
  hooks?: KubeRegistryHooks;
}

/** The Kubernetes API as a service registry. */
export class KubeRegistry implements ServiceRegistry {
  readonly #options: KubeRegistryOptions;
  readonly #informers = new Map<Kind, Informer>();
  #snapshot: RegistrySnapshot;
  /** Pending endpoints of the last snapshot (address by service), to count new ones once. */
  #pending = new Set<string>();
  #onChange: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** @param options the API, cluster, namespace and observers */
  constructor(options: KubeRegistryOptions) {
    this.#options = options;
    this.#snapshot = this.#build();
  }

  /** Lists every type, then follows the watches; `onChange` after each coalesced change. */
  async start(onChange: () => void): Promise<void> {
    const o = this.#options;
    for (const [kind, path] of WATCHED) {
      const full = o.namespace && kind !== "Namespace"
        ? path.replace(/\/([a-z]+)$/, `/namespaces/${o.namespace}/$1`)
        : path;
      this.#informers.set(
        kind,
        new Informer({
          config: o.config,
          api: o.api,
          path: full,
          label: `${kind} (${full})`,
          retryMs: o.retryMs,
          logger: o.logger,
          onEvent: (event) => {
            o.hooks?.onEvent?.(kind, event);
            this.#changed();
          },
          onFailure: () => o.hooks?.onFailure?.(kind),
        }),
      );
    }
    for (const i of this.#informers.values()) i.start();
    await Promise.all([...this.#informers.values()].map((i) => i.synced));
    if (this.#stopped) return;
    this.#snapshot = this.#build();
    this.#onChange = onChange;
  }

  /** The current snapshot (immutable: a new one replaces it on each change). */
  snapshot(): RegistrySnapshot {
    return this.#snapshot;
  }

  /** Stops every informer. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const i of this.#informers.values()) await i.stop();
  }

  #changed(): void {
    if (this.#onChange === undefined || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped) return;
      this.#snapshot = this.#build();
      this.#onChange?.();
    }, this.#options.coalesceMs ?? 20);
  }

  #objects<T>(kind: Kind): T[] {
    return (this.#informers.get(kind)?.list() ?? []) as T[];
  }

  #build(): RegistrySnapshot {
    const o = this.#options;
    const convert = { clusterID: o.clusterID, domain: o.domain ?? "cluster.local" };
    const counts: ConvertCounts = { noIp: 0, pending: [], noPod: 0 };
    const namespaces = new Map<string, V1Namespace>();
    for (const ns of this.#objects<V1Namespace>("Namespace")) {
      const name = ns.metadata?.name ?? "";
      if (!o.namespace || o.namespace === name) namespaces.set(name, ns);
    }
    const podList = this.#objects<V1Pod>("Pod");
    const pods = new Map(podList.map((p) => [nameOf(p), p]));
    const workloads = podWorkloads(podList, namespaces, convert, counts);
    const services = registryServices(
      this.#objects<V1Service>("Service"),
      this.#objects<V1EndpointSlice>("EndpointSlice"),
      pods,
      workloads,
      convert,
      counts,
    );
    const pending = new Set(counts.pending);
    const newlyPending = [...pending].filter((p) => !this.#pending.has(p)).length;
    this.#pending = pending;
    o.hooks?.onSnapshot?.(counts, newlyPending);
    return Object.freeze({
      workloads: [...workloads.values()],
      services,
      debug: {
        registry: "Kubernetes",
        clusterID: o.clusterID,
        namespaces: [...namespaces.values()].map((ns) => ({
          name: ns.metadata?.name ?? "",
          network: ns.metadata?.labels?.[NETWORK_LABEL] ?? "",
          injection: Object.fromEntries(
            INJECTION_LABELS.flatMap((l) => {
              const v = ns.metadata?.labels?.[l];
              return v === undefined ? [] : [[l, v]];
            }),
          ),
        })),
        serviceAccounts: this.#objects<KubernetesObject>("ServiceAccount").map(nameOf).sort(),
        podsWithoutIp: counts.noIp,
        endpointsPendingPod: counts.pending,
        endpointsWithoutPod: counts.noPod,
      },
    });
  }
}

function nameOf(o: KubernetesObject): string {
  return `${o.metadata?.namespace ?? "default"}/${o.metadata?.name ?? ""}`;
}
