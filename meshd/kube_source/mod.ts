/**
 * Kubernetes as meshd's config source (issue 14, item 1; istiod's config/kube/crdclient): one
 * informer per watched type (resources.ts; informer.ts: client-node's ListWatch, a list and then a
 * watch from the list's resourceVersion, re-listed on 410 Gone, restarted with backoff on failures).
 *
 * Every object is validated by shared's `validateText` (resources.ts) and handed to the config store
 * as a batch ({@link ConfigFeed}): the same resource index, last-good rule, rejection count
 * (`disco_total_rejected_configs`) and push context as the file source. Events within `coalesceMs`
 * form one batch, so a `kubectl apply -f` of many objects is one revision.
 *
 * `start` resolves only when every type has been listed once (or its API answered 404: the CRD is not
 * installed; it is looked for again with the backoff): meshd never serves a partial view of the
 * cluster's config, in which a missing AuthorizationPolicy would allow what it denies.
 *
 * @module
 */
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { ApiClient } from "./api_client.ts";
import { Informer, type InformerEvent } from "./informer.ts";
import type { ConfigFeed, FeedItem } from "../config_store/mod.ts";
import type { ValidationResult } from "../../shared/mod.ts";
import {
  collectionPath,
  documentOf,
  isCredentialSecret,
  type KubeObject,
  objectName,
  validateObject,
  WATCHED_RESOURCES,
  type WatchedResource,
} from "./resources.ts";

/** Where the source logs; matches meshd/logging's scope loggers. */
export interface KubeSourceLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link KubeSource}. */
export interface KubeSourceOptions {
  /** The client configuration (kube_config.ts). */
  config: KubeConfig;
  /** The client to use, shared with meshd's other API users (not closed by stop); default its own. */
  api?: ApiClient;
  /** For logs: which API server, from where. */
  description: string;
  /** MESH_WATCH_NAMESPACE: watch only this namespace; default every namespace. */
  namespace?: string;
  /** The mesh root namespace, for the validator's root-namespace rules. */
  rootNamespace?: string;
  /** The types to watch; default {@link WATCHED_RESOURCES}. */
  resources?: readonly WatchedResource[];
  /** How long events are gathered into one batch, ms; default 20. */
  coalesceMs?: number;
  /** The first retry delay after a failed list or watch, ms (doubling up to 30 s); default 1000. */
  retryMs?: number;
  /** Default: nothing is logged. */
  logger?: KubeSourceLogger;
  /** A watch of this kind ended with 410 Gone and its informer lists again. */
  onGone?(kind: string): void;
  /** Each informer event, by kind (disco_orch_cfg_events). */
  onEvent?(kind: string, event: InformerEvent): void;
  /** A list or watch failed and is retried (controller_sync_errors_total). */
  onFailure?(kind: string): void;
}

/** One object as last seen, and what validating it found (meshd/kube_source/status_writer.ts reads these). */
export interface ValidatedObject {
  /** The resource index's name of the object ({@link objectName}). */
  name: string;
  resource: WatchedResource;
  /** The object as watched (status included); undefined once deleted. */
  object: KubeObject | undefined;
  /** undefined for a deleted object or a Secret that is no credential. */
  result: ValidationResult | undefined;
}

/** The Kubernetes API as a {@link ConfigFeed}. */
export class KubeSource implements ConfigFeed {
  readonly description: string;
  readonly #options: KubeSourceOptions;
  readonly #informers: Informer[] = [];
  readonly #api: ApiClient;
  readonly #ownsApi: boolean;
  /** Objects changed since the last batch, by name; the value undefined means deleted. */
  readonly #pending = new Map<string, { resource: WatchedResource; obj: KubeObject | undefined }>();
  #apply: ((batch: readonly FeedItem[]) => void) | undefined;
  /** Every object's last validation, and the document validated (to skip status-only changes). */
  readonly #validated = new Map<string, ValidatedObject & { doc: string }>();
  readonly #validatedListeners = new Set<(items: readonly ValidatedObject[]) => void>();
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #started = false;
  #stopped = false;

  /** @param options the API, namespaces, timings and observers */
  constructor(options: KubeSourceOptions) {
    this.#options = options;
    this.description = options.description;
    this.#ownsApi = options.api === undefined;
    this.#api = options.api ?? new ApiClient(options.config);
  }

  /** Lists every type, applies everything as the first batch, then follows the watches. */
  async start(apply: (batch: readonly FeedItem[]) => void): Promise<void> {
    if (this.#started) throw new Error("KubeSource already started");
    this.#started = true;
    const o = this.#options;
    for (const resource of o.resources ?? WATCHED_RESOURCES) {
      const path = collectionPath(resource, o.namespace);
      this.#informers.push(
        new Informer({
          config: o.config,
          api: this.#api,
          path,
          label: `${resource.apiVersion} ${resource.kind} (${path})`,
          retryMs: o.retryMs,
          // The mesh's own CRDs belong to the install; Istio's are optional aliases.
          optional: !/^(networking|security)\.mesh\.io\//.test(resource.apiVersion),
          logger: o.logger,
          onEvent: (event, obj) => {
            o.onEvent?.(resource.kind, event);
            this.#note(resource, obj, event === "delete");
          },
          onGone: () => o.onGone?.(resource.kind),
          onFailure: () => o.onFailure?.(resource.kind),
        }),
      );
    }
    for (const i of this.#informers) i.start();
    await Promise.all(this.#informers.map((i) => i.synced));
    if (this.#stopped) return;
    this.#apply = apply;
    this.#flush();
  }

  /** Stops every informer; pending events are dropped. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    for (const i of this.#informers) await i.stop();
    if (this.#ownsApi) await this.#api.close();
  }

  #note(resource: WatchedResource, obj: KubernetesObject, deleted: boolean): void {
    const namespace = obj.metadata?.namespace ?? "default";
    const name = objectName(resource, namespace, obj.metadata?.name ?? "");
    this.#pending.set(name, { resource, obj: deleted ? undefined : obj });
    if (this.#apply === undefined || this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => this.#flush(), this.#options.coalesceMs ?? 20);
  }

  /**
   * Calls `listener` with every object validated so far, then with each batch of changes (status-only
   * changes included, which the config store does not see). Returns the unsubscribe function.
   */
  onValidated(listener: (items: readonly ValidatedObject[]) => void): () => void {
    this.#validatedListeners.add(listener);
    const known = [...this.#validated.values()];
    if (known.length > 0) listener(known);
    return () => this.#validatedListeners.delete(listener);
  }

  #flush(): void {
    this.#flushTimer = undefined;
    if (this.#stopped || this.#apply === undefined) return;
    const batch: FeedItem[] = [];
    const validated: ValidatedObject[] = [];
    for (const [name, { resource, obj }] of [...this.#pending].sort(([a], [b]) => (a < b ? -1 : 1))) {
      // A Secret that holds no credential is not config (nor is one that stopped holding one).
      const config = obj !== undefined && (resource.kind !== "Secret" || isCredentialSecret(obj));
      const doc = config ? JSON.stringify(documentOf(resource, obj)) : "";
      const before = this.#validated.get(name);
      // A change of status or server-set metadata only is no change of config: not validated, logged
      // or counted again.
      const result = config && before?.doc === doc
        ? before.result
        : config
        ? validateObject(resource, obj, name, this.#options.rootNamespace)
        : undefined;
      const item = { name, resource, object: obj, result };
      validated.push(item);
      if (config) this.#validated.set(name, { ...item, doc });
      else this.#validated.delete(name);
      if (config && before?.doc === doc) continue;
      batch.push({ name, result });
    }
    this.#pending.clear();
    if (batch.length > 0) this.#apply(batch);
    for (const l of [...this.#validatedListeners]) l(validated);
  }
}
