/**
 * Kubernetes as meshd's config source (issue 14, item 1; istiod's config/kube/crdclient): one
 * @kubernetes/client-node informer per watched type (resources.ts), each a list and then a watch from
 * the list's resourceVersion. client-node's ListWatch re-lists when the watch ends with 410 Gone (an
 * `ERROR` event with code 410, or a 410 answer) and resumes from the last resourceVersion after a
 * timeout or a closed stream; any other failure stops it, so this source restarts it with backoff
 * (1 s doubling to 30 s) from where it was.
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
import { type KubeConfig, ListWatch } from "@kubernetes/client-node";
import { ApiClient } from "./api_client.ts";
import { DenoWatch } from "./watch_transport.ts";
import type { KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
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
}

const MAX_RETRY_MS = 30_000;

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

/** One watched type: its informer, retry state, and whether its first list is done. */
interface Watcher {
  resource: WatchedResource;
  informer: ListWatch<KubernetesObject>;
  watch: DenoWatch;
  synced: boolean;
  retryMs: number;
  timer?: ReturnType<typeof setTimeout>;
  /** The last failure logged, so that a failure repeating every retry is logged once. */
  lastFailure?: string;
}

/** The Kubernetes API as a {@link ConfigFeed}. */
export class KubeSource implements ConfigFeed {
  readonly description: string;
  readonly #options: KubeSourceOptions;
  readonly #watchers: Watcher[] = [];
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
  #syncedAll: (() => void) | undefined;

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
    const synced = new Promise<void>((resolve) => (this.#syncedAll = resolve));
    for (const resource of this.#options.resources ?? WATCHED_RESOURCES) {
      this.#watchers.push(this.#makeWatcher(resource));
    }
    for (const w of this.#watchers) this.#startWatcher(w);
    await synced;
    if (this.#stopped) return;
    this.#apply = apply;
    this.#flush();
  }

  /** Stops every informer; pending events are dropped. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#syncedAll?.();
    for (const w of this.#watchers) {
      if (w.timer !== undefined) clearTimeout(w.timer);
      await w.informer.stop();
      await w.watch.stop();
    }
    if (this.#ownsApi) await this.#api.close();
  }

  #makeWatcher(resource: WatchedResource): Watcher {
    const o = this.#options;
    const path = collectionPath(resource, o.namespace);
    const watch = new DenoWatch(o.config, this.#api, () => {
      o.onGone?.(resource.kind);
      log(o).info(`${this.#label(w)}: resourceVersion too old (410 Gone): listing again`);
    });
    const informer = new ListWatch<KubernetesObject>(
      path,
      watch,
      () => this.#api.list<KubernetesListObject<KubernetesObject>>(path),
      false,
    );
    const w: Watcher = { resource, informer, watch, synced: false, retryMs: o.retryMs ?? 1000 };
    informer.on("add", (obj) => this.#note(resource, obj, false));
    informer.on("update", (obj) => this.#note(resource, obj, false));
    informer.on("delete", (obj) => this.#note(resource, obj, true));
    informer.on("error", (err) => this.#failed(w, err));
    return w;
  }

  async #startWatcher(w: Watcher): Promise<void> {
    w.timer = undefined;
    if (this.#stopped) return;
    // ListWatch.start lists (unless it has a resourceVersion to resume from) and starts the watch;
    // a failure went to the error callback, which schedules the next attempt.
    const failuresBefore = w.lastFailure;
    await w.informer.start();
    if (this.#stopped || w.timer !== undefined) return;
    if (failuresBefore !== undefined) log(this.#options).info(`${this.#label(w)}: watching again`);
    w.lastFailure = undefined;
    w.retryMs = this.#options.retryMs ?? 1000;
    this.#markSynced(w);
  }

  #failed(w: Watcher, err: unknown): void {
    if (this.#stopped) return;
    const status = statusOf(err);
    const failure = status === 404
      ? "not served (404): its CRD is not installed"
      : `${status ? `HTTP ${status}` : "failed"}: ${err instanceof Error ? err.message : String(err)}`;
    if (failure !== w.lastFailure) {
      // The mesh's own CRDs belong to the install; Istio's are optional aliases.
      const level = status === 404 && !/^(networking|security)\.mesh\.io\//.test(w.resource.apiVersion)
        ? "info"
        : "warn";
      log(this.#options)[level](`${this.#label(w)}: ${failure}; retrying in ${w.retryMs} ms`);
    }
    w.lastFailure = failure;
    // A type that is not served has nothing to wait for: the others' config is served meanwhile.
    if (status === 404) this.#markSynced(w);
    if (w.timer !== undefined) clearTimeout(w.timer);
    w.timer = setTimeout(() => void this.#startWatcher(w), w.retryMs);
    w.retryMs = Math.min(w.retryMs * 2, MAX_RETRY_MS);
  }

  #markSynced(w: Watcher): void {
    if (w.synced) return;
    w.synced = true;
    if (this.#watchers.every((x) => x.synced)) this.#syncedAll?.();
  }

  #label(w: Watcher): string {
    return `${w.resource.apiVersion} ${w.resource.kind} (${
      collectionPath(w.resource, this.#options.namespace)
    })`;
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

const SILENT: KubeSourceLogger = { info: () => {}, warn: () => {}, error: () => {} };

function log(options: KubeSourceOptions): KubeSourceLogger {
  return options.logger ?? SILENT;
}

/** The HTTP status of a client-node failure: ApiException's `code`, Watch's `statusCode`. */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = "code" in err ? err.code : "statusCode" in err ? err.statusCode : undefined;
  return typeof code === "number" ? code : undefined;
}
