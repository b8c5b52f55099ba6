/**
 * Writes what validation found into the mesh objects' `status.validationMessages` (issue 14, item 1;
 * Istio's analysis/status controller writes the same field): a rejected object gets one message per
 * error, as Istio's analysis messages (`type` IST0106 SchemaValidationError, `level: ERROR`,
 * `documentationUrl`) plus the mesh's `field` (the field path) and `message` (the text of meshd's
 * `rejected:` log line, which names the object, the field and the reason); a valid object's stale
 * messages are removed. The config store keeps serving the object's last good version meanwhile.
 *
 * Only objects whose CRD serves the status subresource are written (read once per group/version from
 * the API's discovery), with a JSON merge patch to `/status`, and only when the messages differ from
 * what the object holds, so that the writer never fights another (a changed status comes back through
 * the watch and then matches). Only the elected leader writes (meshd/leader_election): {@link start}
 * on gaining leadership re-checks every object, {@link stop} stops at once, dropping pending writes.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { formatIssue } from "../../shared/mod.ts";
import { type ApiClient, TokenBucket } from "./api_client.ts";
import type { KubeSource, ValidatedObject } from "./mod.ts";
import type { LeaderTask } from "../leader_election/controllers.ts";
import type { WatchedResource } from "./resources.ts";

/** One entry of `status.validationMessages`. */
export interface ValidationMessage {
  type: { code: string; name: string };
  level: "ERROR";
  documentationUrl: string;
  field: string;
  message: string;
}

const SCHEMA_ERROR = { code: "IST0106", name: "SchemaValidationError" };
const DOC_URL = "https://istio.io/latest/docs/reference/config/analysis/ist0106/";

/** The messages an object should hold: one per error of its validation. Pure. */
export function validationMessages(v: Pick<ValidatedObject, "result">): ValidationMessage[] {
  return (v.result?.issues ?? []).filter((i) => i.severity === "error").map((issue) => ({
    type: SCHEMA_ERROR,
    level: "ERROR" as const,
    documentationUrl: DOC_URL,
    field: issue.field,
    // The config store's log line: `rejected: <this>`.
    message: formatIssue(issue).slice(issue.severity.length + 2),
  }));
}

/** The API path of an object's status subresource. */
export function statusPath(r: WatchedResource, namespace: string, name: string): string {
  return `/apis/${r.apiVersion}/namespaces/${encodeURIComponent(namespace)}/${r.plural}/${
    encodeURIComponent(name)
  }/status`;
}

/** Options of {@link StatusWriter}. */
export interface StatusWriterOptions {
  api: Pick<ApiClient, "json">;
  log: { info(m: string): void; warn(m: string): void };
  /** How long a failed write waits before it is tried again, ms; default 5000. */
  retryMs?: number;
  /**
   * DISCO_STATUS_QPS and DISCO_STATUS_BURST (Istio's PILOT_STATUS_QPS/_BURST): status writes per second
   * and the burst above it, on top of the API client's own limit, so that a burst of invalid objects
   * does not take the whole --orchApiQPS. Default: no limit of its own.
   */
  rateLimit?: { qps: number; burst: number };
}

interface Entry {
  resource: WatchedResource;
  namespace: string;
  objectName: string;
  /** What the object holds now, as last watched. */
  current: unknown;
  desired: ValidationMessage[];
}

/** Keeps objects' validation messages in their status while started. */
export class StatusWriter {
  readonly #o: StatusWriterOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #queue = new Set<string>();
  /** Per apiVersion: the plurals whose status subresource is served. */
  readonly #statusPlurals = new Map<string, Promise<Set<string>>>();
  #abort: AbortController | undefined;
  #draining: Promise<void> | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  readonly #limiter: TokenBucket | undefined;

  /** @param options the API client, where to log, the rate limit */
  constructor(options: StatusWriterOptions) {
    this.#o = options;
    const r = options.rateLimit;
    this.#limiter = r && r.qps > 0 ? new TokenBucket(r.qps, Math.max(1, r.burst)) : undefined;
  }

  /** Feeds objects as the config source validated them (KubeSource.onValidated). */
  update(items: readonly ValidatedObject[]): void {
    for (const v of items) {
      // Only the mesh's CRD kinds have validation messages; Secrets are core objects.
      if (!v.object || !v.resource.apiVersion.includes("/") || v.result === undefined) {
        this.#entries.delete(v.name);
        continue;
      }
      const m = v.object.metadata ?? {};
      const status = (v.object as { status?: { validationMessages?: unknown } }).status;
      this.#entries.set(v.name, {
        resource: v.resource,
        namespace: m.namespace ?? "default",
        objectName: m.name ?? "",
        current: status?.validationMessages,
        desired: validationMessages(v),
      });
      this.#queue.add(v.name);
    }
    this.#kick();
  }

  /** Starts writing (leadership gained): every object is checked again. */
  start(): void {
    if (this.#abort) return;
    this.#abort = new AbortController();
    for (const k of this.#entries.keys()) this.#queue.add(k);
    this.#kick();
  }

  /** Stops writing at once (leadership lost): the write in flight is aborted. */
  stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
    clearTimeout(this.#retry);
  }

  #kick(): void {
    if (!this.#abort || this.#draining) return;
    const signal = this.#abort.signal;
    this.#draining = this.#drain(signal).finally(() => {
      this.#draining = undefined;
      if (!signal.aborted && this.#queue.size > 0) this.#kick();
    });
  }

  async #drain(signal: AbortSignal): Promise<void> {
    const failed: string[] = [];
    while (!signal.aborted && this.#queue.size > 0) {
      const key = this.#queue.values().next().value!;
      this.#queue.delete(key);
      const e = this.#entries.get(key);
      if (!e || isDeepStrictEqual(e.current ?? [], e.desired)) continue;
      try {
        if (!(await this.#hasStatus(e.resource, signal))) continue;
        await this.#limiter?.take(signal);
        await this.#o.api.json("PATCH", statusPath(e.resource, e.namespace, e.objectName), {
          body: { status: { validationMessages: e.desired.length > 0 ? e.desired : null } },
          contentType: "application/merge-patch+json",
          signal,
        });
        e.current = e.desired;
        this.#o.log.info(
          e.desired.length > 0
            ? `${key}: status.validationMessages set (${e.desired.length} error(s))`
            : `${key}: status.validationMessages cleared`,
        );
      } catch (err) {
        if (signal.aborted) return;
        const status = (err as { statusCode?: number }).statusCode;
        if (status === 404) continue; // deleted meanwhile: its DELETED event follows
        this.#o.log.warn(`${key}: could not write status.validationMessages: ${(err as Error).message}`);
        failed.push(key);
      }
    }
    if (failed.length > 0 && !signal.aborted) {
      clearTimeout(this.#retry);
      this.#retry = setTimeout(() => {
        for (const k of failed) this.#queue.add(k);
        this.#kick();
      }, this.#o.retryMs ?? 5000);
    }
  }

  /** Whether the CRD of `r` serves `/status`, from `/apis/<group>/<version>` (asked again after a failure). */
  async #hasStatus(r: WatchedResource, signal: AbortSignal): Promise<boolean> {
    let found = this.#statusPlurals.get(r.apiVersion);
    if (!found) {
      found = this.#o.api.json<{ resources?: { name: string }[] }>("GET", `/apis/${r.apiVersion}`, { signal })
        .then((list) =>
          new Set(
            (list.resources ?? []).filter((x) => x.name.endsWith("/status")).map((x) => x.name.split("/")[0]),
          )
        );
      this.#statusPlurals.set(r.apiVersion, found);
      found.catch(() => this.#statusPlurals.delete(r.apiVersion));
    }
    return (await found).has(r.plural);
  }
}

/**
 * A {@link StatusWriter} fed by `source`, as a task of the elected leader
 * (meshd/leader_election/controllers.ts); `unsubscribe` ends the feed at shutdown.
 */
export function statusWriterTask(
  source: Pick<KubeSource, "onValidated">,
  options: StatusWriterOptions,
): { task: LeaderTask; unsubscribe: () => void } {
  const writer = new StatusWriter(options);
  const unsubscribe = source.onValidated((items) => writer.update(items));
  return {
    task: {
      name: "status writer",
      start: () => {
        writer.start();
        return () => writer.stop();
      },
    },
    unsubscribe,
  };
}
