/**
 * One informer over the shared {@link ApiClient}, as client-go's: @kubernetes/client-node's ListWatch
 * lists, then watches from the list's resourceVersion, re-lists when the watch ends with 410 Gone (an
 * `ERROR` event with code 410, or a 410 answer) and resumes from the last resourceVersion after a
 * timeout or a closed stream. Any other failure stops ListWatch, so this restarts it with backoff (1 s
 * doubling to 30 s) from where it was. Used by the config source (mod.ts) and the service registry
 * (meshd/kube_registry).
 *
 * @module
 */
import {
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
} from "@kubernetes/client-node";
import type { ApiClient } from "../../shared/internal/kube/api_client.ts";
import { DenoWatch } from "./watch_transport.ts";

/** Where an informer logs; matches meshd/logging's scope loggers. */
export interface InformerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What an informer's handler is told: client-node's event names. */
export type InformerEvent = "add" | "update" | "delete";

/** Options of {@link Informer}. */
export interface InformerOptions {
  config: KubeConfig;
  api: ApiClient;
  /** The collection path, e.g. `/api/v1/namespaces/foo/pods`. */
  path: string;
  /** For logs: the type and path. */
  label: string;
  /** A field selector for the list and the watch, e.g. `metadata.name=x` (RBAC's resourceNames need it). */
  fieldSelector?: string;
  /** The first retry delay, ms (doubling up to 30 s); default 1000. */
  retryMs?: number;
  /** A 404 (type not served: an optional CRD) is logged as info, not as a warning. */
  optional?: boolean;
  logger?: InformerLogger;
  /** Every object added, updated or deleted, in the order the watch delivers them. */
  onEvent(event: InformerEvent, obj: KubernetesObject): void;
  /** The watch ended with 410 Gone; the informer lists again. */
  onGone?(): void;
  /** A list or watch failed (controller_sync_errors_total); the informer retries. */
  onFailure?(status: number | undefined): void;
}

const MAX_RETRY_MS = 30_000;
const SILENT: InformerLogger = { info: () => {}, warn: () => {}, error: () => {} };

/** The longest wait before a watch that ended is started again, ms. */
const MAX_RECONNECT_DELAY_MS = 1000;

/** One list-and-watch of a collection with retries; its objects are client-node's cache. */
export class Informer {
  /** Resolves when the collection was listed once, answered 404 (not served), or the informer stopped. */
  readonly synced: Promise<void>;
  readonly #options: InformerOptions;
  readonly #informer: ListWatch<KubernetesObject>;
  readonly #watch: DenoWatch;
  readonly #firstRetryMs: number;
  #retryMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The last failure logged, so that a failure repeating every retry is logged once. */
  #lastFailure: string | undefined;
  #markSynced!: () => void;
  #stopped = false;
  /** The reconnect waits in progress, ended by {@link stop}. */
  readonly #delays = new Set<() => void>();

  /** @param options the collection, client, timings and observers */
  constructor(options: InformerOptions) {
    this.#options = options;
    this.#firstRetryMs = this.#retryMs = options.retryMs ?? 1000;
    this.synced = new Promise<void>((resolve) => (this.#markSynced = resolve));
    this.#watch = new DenoWatch(options.config, options.api, () => {
      options.onGone?.();
      this.#log.info(`${options.label}: resourceVersion too old (410 Gone): listing again`);
    });
    this.#informer = new ListWatch<KubernetesObject>(
      options.path,
      this.#watch,
      () =>
        options.fieldSelector === undefined
          ? options.api.list<KubernetesListObject<KubernetesObject>>(options.path)
          : options.api.json<KubernetesListObject<KubernetesObject>>("GET", options.path, {
            query: { fieldSelector: options.fieldSelector },
          }),
      false,
      undefined,
      options.fieldSelector,
      // ListWatch's default waits with `setTimeout` called without a callback: no wait at all, and a
      // timer armed that nothing clears (the op sanitizer reported them). This one waits, at most 1 s
      // (ListWatch doubles it to 30 s across quiet watch ends: config would arrive that late), and ends
      // at stop; 1 s still keeps a server that ends every watch at once from being hammered.
      { delayFn: (ms) => this.#delay(Math.min(ms, MAX_RECONNECT_DELAY_MS)) },
    );
    this.#informer.on("add", (obj) => options.onEvent("add", obj));
    this.#informer.on("update", (obj) => options.onEvent("update", obj));
    this.#informer.on("delete", (obj) => options.onEvent("delete", obj));
    this.#informer.on("error", (err) => this.#failed(err));
  }

  /** Starts listing and watching; failures are retried until {@link stop}. */
  start(): void {
    void this.#run();
  }

  /** The objects listed and watched so far. */
  list(): readonly KubernetesObject[] {
    return this.#informer.list();
  }

  /** Stops the watch and the retries; {@link synced} resolves. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#markSynced();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    for (const end of this.#delays) end();
    await this.#informer.stop();
    await this.#watch.stop();
  }

  /** ListWatch's reconnect delay after a watch ended: `ms`, or until {@link stop}. */
  #delay(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.#delays.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.#delays.add(end);
    });
  }

  get #log(): InformerLogger {
    return this.#options.logger ?? SILENT;
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    // ListWatch.start lists (unless it has a resourceVersion to resume from) and starts the watch; a
    // failure went to the error callback, which schedules the next attempt.
    const failedBefore = this.#lastFailure;
    await this.#informer.start();
    if (this.#stopped || this.#timer !== undefined) return;
    if (failedBefore !== undefined) this.#log.info(`${this.#options.label}: watching again`);
    this.#lastFailure = undefined;
    this.#retryMs = this.#firstRetryMs;
    this.#markSynced();
  }

  #failed(err: unknown): void {
    if (this.#stopped) return;
    const status = statusOf(err);
    this.#options.onFailure?.(status);
    const failure = status === 404
      ? "not served (404): its CRD is not installed"
      : `${status ? `HTTP ${status}` : "failed"}: ${err instanceof Error ? err.message : String(err)}`;
    if (failure !== this.#lastFailure) {
      const level = status === 404 && this.#options.optional ? "info" : "warn";
      this.#log[level](`${this.#options.label}: ${failure}; retrying in ${this.#retryMs} ms`);
    }
    this.#lastFailure = failure;
    // A type that is not served has nothing to wait for: the others are served meanwhile.
    if (status === 404) this.#markSynced();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#run(), this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }
}

/** The HTTP status of a client-node failure: ApiException's `code`, Watch's `statusCode`. */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = "code" in err ? err.code : "statusCode" in err ? err.statusCode : undefined;
  return typeof code === "number" ? code : undefined;
}
