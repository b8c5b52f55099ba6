/**
 * Publishes the CA's roots into every namespace as the ConfigMap `mesh-ca-root-cert` (key
 * `root-cert.pem`), which injected sidecars mount, as istiod's NamespaceController publishes
 * `istio-ca-root-cert` (root_cert_config_map.ts decides what each namespace needs). Run by the elected
 * leader only ({@link rootCertTask}, a task of meshd/leader_election/controllers.ts).
 *
 * Two informers on meshd's one rate-limited API client: Namespaces, and ConfigMaps named
 * `mesh-ca-root-cert` (a `metadata.name` field selector, so RBAC can limit list and watch to that name).
 * Once both listed, every namespace is reconciled; then a namespace is reconciled again when it is added
 * or changed, when its ConfigMap is changed or deleted (an edit is undone, a deletion re-created), and
 * all of them when the CA's trust bundle changes (root rotation). With MESH_WATCH_NAMESPACE only that
 * namespace is watched and written. A failed write is counted (controller_sync_errors_total), logged,
 * and retried 5 times (0.2 s doubling, as Istio's queue retries 5 times); after that the namespace waits
 * for its next event.
 *
 * @module
 */
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { ApiClient } from "../../shared/internal/kube/api_client.ts";
import { Informer, type InformerLogger } from "../kube_source/informer.ts";
import type { LeaderTask } from "../leader_election/controllers.ts";
import {
  type ConfigMap,
  publishesTo,
  ROOT_CERT_CONFIG_MAP,
  type RootCertAction,
  rootCertAction,
} from "./root_cert_config_map.ts";

/** Where the roots come from: meshd's CertificateAuthority (`trustBundlePem`, `onBundleChange`). */
export interface RootsSource {
  readonly trustBundlePem: string;
  onBundleChange(listener: () => void): () => void;
}

/** Options of {@link RootCertPublisher}. */
export interface RootCertPublisherOptions {
  config: KubeConfig;
  api: ApiClient;
  /** MESH_WATCH_NAMESPACE ("" for every namespace). */
  watchNamespace: string;
  roots: RootsSource;
  logger: InformerLogger;
  /** A list, watch or write failed (controller_sync_errors_total). */
  onFailure?: () => void;
  /** The first retry delay of a failed write, ms (default 200). */
  retryMs?: number;
}

const MAX_ATTEMPTS = 5;

/** The controller; {@link start} it, {@link stop} it when leadership is lost. */
export class RootCertPublisher {
  readonly #o: RootCertPublisherOptions;
  readonly #abort = new AbortController();
  /** Namespace name → its `status.phase`. */
  readonly #namespaces = new Map<string, string | undefined>();
  /** Namespace name → its ConfigMap as last seen (watch event or own write). */
  readonly #configMaps = new Map<string, ConfigMap>();
  readonly #informers: Informer[];
  readonly #pending = new Set<string>();
  readonly #attempts = new Map<string, number>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #ready = false;
  #draining: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  /** Resolves once both informers listed and every namespace was queued. */
  readonly synced: Promise<void>;

  /** @param options the API, MESH_WATCH_NAMESPACE, the roots and the observers */
  constructor(options: RootCertPublisherOptions) {
    this.#o = options;
    const ns = options.watchNamespace;
    const common = { config: options.config, api: options.api, logger: options.logger };
    const namespaces = new Informer({
      ...common,
      path: "/api/v1/namespaces",
      label: "Namespaces (root certificate ConfigMaps)",
      fieldSelector: ns ? `metadata.name=${ns}` : undefined,
      onEvent: (event, obj) => this.#namespaceEvent(event, obj),
      onFailure: () => options.onFailure?.(),
    });
    const configMaps = new Informer({
      ...common,
      path: ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps` : "/api/v1/configmaps",
      label: `ConfigMaps ${ROOT_CERT_CONFIG_MAP}`,
      fieldSelector: `metadata.name=${ROOT_CERT_CONFIG_MAP}`,
      onEvent: (event, obj) => this.#configMapEvent(event, obj as ConfigMap),
      onFailure: () => options.onFailure?.(),
    });
    this.#informers = [namespaces, configMaps];
    this.synced = Promise.all(this.#informers.map((i) => i.synced)).then(() => {
      if (this.#abort.signal.aborted) return;
      this.#ready = true;
      this.#enqueue([...this.#namespaces.keys()]);
    });
  }

  /** Starts watching; the writes follow once both informers listed. */
  start(): void {
    this.#unsubscribe = this.#o.roots.onBundleChange(() => {
      if (!this.#ready) return;
      const published = [...this.#namespaces].filter(([ns, phase]) =>
        publishesTo(ns, this.#o.watchNamespace, phase)
      ).map(([ns]) => ns);
      this.#o.logger.info(
        `the mesh root changed: updating ${ROOT_CERT_CONFIG_MAP} in ${published.length} namespace(s)`,
      );
      this.#enqueue(published);
    });
    for (const i of this.#informers) i.start();
  }

  /** Stops at once: requests in flight are aborted, no write follows. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#unsubscribe?.();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#pending.clear();
    await Promise.all(this.#informers.map((i) => i.stop()));
    await this.#draining;
  }

  #namespaceEvent(event: string, obj: KubernetesObject): void {
    const name = obj.metadata?.name;
    if (!name) return;
    if (event === "delete") {
      this.#namespaces.delete(name);
      this.#configMaps.delete(name);
      return;
    }
    this.#namespaces.set(name, (obj as { status?: { phase?: string } }).status?.phase);
    this.#enqueue([name]);
  }

  #configMapEvent(event: string, obj: ConfigMap): void {
    const ns = obj.metadata?.namespace;
    if (!ns) return;
    if (event === "delete") this.#configMaps.delete(ns);
    else this.#configMaps.set(ns, obj);
    this.#enqueue([ns]);
  }

  #enqueue(namespaces: string[]): void {
    if (!this.#ready || this.#abort.signal.aborted) return;
    for (const ns of namespaces) this.#pending.add(ns);
    this.#kick();
  }

  /** Starts draining the queue unless it is being drained; what was queued meanwhile is drained next. */
  #kick(): void {
    if (this.#draining || this.#abort.signal.aborted) return;
    this.#draining = this.#drain().finally(() => {
      this.#draining = undefined;
      if (this.#pending.size > 0) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#pending.size > 0 && !this.#abort.signal.aborted) {
      const [ns] = this.#pending;
      this.#pending.delete(ns);
      try {
        await this.#reconcile(ns);
        this.#attempts.delete(ns);
      } catch (e) {
        if (this.#abort.signal.aborted) return;
        this.#failed(ns, e as Error);
      }
    }
  }

  #failed(ns: string, e: Error): void {
    this.#o.onFailure?.();
    const attempt = (this.#attempts.get(ns) ?? 0) + 1;
    const where = `ConfigMap ${ns}/${ROOT_CERT_CONFIG_MAP}`;
    if (attempt >= MAX_ATTEMPTS) {
      this.#attempts.delete(ns);
      this.#o.logger.error(`${where}: ${e.message}; gave up after ${attempt} attempts until its next change`);
      return;
    }
    this.#attempts.set(ns, attempt);
    const delay = (this.#o.retryMs ?? 200) * 2 ** (attempt - 1);
    this.#o.logger.warn(`${where}: ${e.message}; retrying in ${delay} ms`);
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#enqueue([ns]);
    }, delay);
    this.#timers.add(timer);
  }

  /** Makes one namespace's ConfigMap hold the roots; a 409 or 404 on the write reads it again (twice at most). */
  async #reconcile(ns: string): Promise<void> {
    if (!this.#namespaces.has(ns) || !publishesTo(ns, this.#o.watchNamespace, this.#namespaces.get(ns))) {
      return;
    }
    let current = this.#configMaps.get(ns);
    for (let tries = 0;; tries++) {
      const action = rootCertAction(ns, current, this.#o.roots.trustBundlePem);
      if (action.kind === "none") return;
      const outcome = await this.#write(ns, action);
      if (outcome === "done" || outcome === "namespace gone") return;
      if (tries === 2) throw new Error(`still ${outcome} after reading it again`);
      current = await this.#read(ns);
    }
  }

  async #write(ns: string, action: RootCertAction & { kind: "create" | "update" }): Promise<string> {
    const base = `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps`;
    const path = action.kind === "create" ? base : `${base}/${ROOT_CERT_CONFIG_MAP}`;
    try {
      const stored = await this.#o.api.json<ConfigMap>(action.kind === "create" ? "POST" : "PUT", path, {
        body: action.body,
        signal: this.#abort.signal,
      });
      this.#configMaps.set(ns, stored);
      this.#o.logger.info(
        `ConfigMap ${ns}/${ROOT_CERT_CONFIG_MAP}: ${
          action.kind === "create" ? "created with" : "root-cert.pem set to"
        } the mesh root`,
      );
      return "done";
    } catch (e) {
      const status = (e as { statusCode?: number }).statusCode;
      // Created into a namespace deleted meanwhile: nothing to do (Istio skips it too).
      if (status === 404 && action.kind === "create") return "namespace gone";
      if (status === 409) return "in conflict (changed meanwhile)";
      if (status === 404) return "missing (deleted meanwhile)";
      throw e;
    }
  }

  /** GETs the ConfigMap; undefined when there is none. */
  async #read(ns: string): Promise<ConfigMap | undefined> {
    try {
      return await this.#o.api.json<ConfigMap>(
        "GET",
        `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${ROOT_CERT_CONFIG_MAP}`,
        { signal: this.#abort.signal },
      );
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return undefined;
      throw e;
    }
  }
}

/**
 * The publisher as a task of the elected leader, or undefined (logged) without a CA
 * (ENABLE_CA_SERVER=false: no roots of meshd's to publish).
 */
export function rootCertTask(
  roots: RootsSource | undefined,
  options: Omit<RootCertPublisherOptions, "roots">,
): LeaderTask | undefined {
  if (!roots) {
    options.logger.info(
      `no CA (ENABLE_CA_SERVER=false): the ConfigMaps ${ROOT_CERT_CONFIG_MAP} are not published`,
    );
    return undefined;
  }
  return {
    name: `${ROOT_CERT_CONFIG_MAP} publisher`,
    start: () => {
      const publisher = new RootCertPublisher({ ...options, roots });
      publisher.start();
      return () => publisher.stop();
    },
  };
}
