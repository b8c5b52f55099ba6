/**
 * meshd's config store (meshd issue, "2. Config store"): the first stage of istiod's flow
 * config store → validated resources → immutable push context.
 *
 * {@link ConfigStore} loads every `*.yaml`, `*.yml` and `*.json` file under `--configDir`
 * (recursively; dotfiles and editor temp files are ignored), validates each document with
 * `validateText` from `shared` (what `meshctl validate` runs), and keeps the valid resources by
 * `Kind/namespace/name`. It watches the directory for creates, changes, deletes and renames,
 * including editors' save-by-rename. Every change produces a new frozen {@link ConfigSnapshot} with a
 * higher revision, and listeners hear which keys were added, updated or removed.
 *
 * A {@link ConfigFeed} (meshd/kube_source, the Kubernetes API) may take the directory's place: it
 * validates its objects with the same `validateText` and hands batches to the same index, one
 * object per "file", so the rules below hold for it alike.
 *
 * An invalid document is rejected: logged with file, line and field, and passed to `onRejected`
 * (meshd counts it in `disco_total_rejected_configs`). It never removes or corrupts valid config:
 * a resource whose document turns invalid keeps its last good version until the file is fixed or
 * deleted; a key defined in two files is served from the file loaded first, and the other file
 * takes over when the first stops defining it.
 *
 * @example
 * ```ts
 * import { ConfigStore } from "./mod.ts";
 * let rejected = 0;
 * const store = new ConfigStore("/etc/mesh/config", { onRejected: () => rejected++ });
 * store.onChange(({ revision, added, updated, removed }) => console.log(revision, added, updated, removed));
 * await store.start();
 * const { revision, resources } = store.snapshot();
 * await store.stop();
 * ```
 *
 * @module
 */
import { formatIssue, validateText, type ValidationIssue, type ValidationResult } from "../../shared/mod.ts";
import { DirectorySource, readConfigFile } from "./directory_source.ts";
import { type ConfigEntry, ResourceIndex } from "./resource_index.ts";

export type { ConfigEntry, ConfigResource, ConfigSource, DeepReadonly } from "./resource_index.ts";
export { resourceKey } from "./resource_index.ts";
export { isConfigPath } from "./directory_source.ts";

/** One object of a {@link ConfigFeed} as validated now; `result` undefined means the object is gone. */
export interface FeedItem {
  /**
   * The object's identity and its name in every message (the "file" of the resource index), e.g.
   * `PeerAuthentication.security.istio.io foo/default`; unique per object.
   */
  readonly name: string;
  readonly result: ValidationResult | undefined;
}

/**
 * A config source other than a directory (meshd/kube_source): it validates each object it reads with
 * shared's validator and hands the store batches, each of which becomes one revision.
 */
export interface ConfigFeed {
  /** What the source is, for logs: e.g. `the Kubernetes API at https://10.0.0.1:443`. */
  readonly description: string;
  /**
   * Starts reading; resolves once the first full read is applied through `apply`.
   *
   * @throws when the source cannot be reached at all (the store does not start)
   */
  start(apply: (batch: readonly FeedItem[]) => void): Promise<void>;
  /** Stops reading and releases connections. Idempotent. */
  stop(): Promise<void>;
}

/** The resources in force at one revision; frozen, and never changed afterwards. */
export interface ConfigSnapshot {
  /** Starts at 0 (nothing loaded) and grows by one with every change. */
  readonly revision: number;
  /** Every resource in force, sorted by key. */
  readonly resources: readonly ConfigEntry[];
  /** The same resources by key (`Kind/namespace/name`). */
  readonly byKey: Readonly<Record<string, ConfigEntry>>;
}

/** One change of the resources in force. Keys are sorted; each appears in at most one list. */
export interface ConfigChange {
  /** The revision of the snapshot that has the change. */
  readonly revision: number;
  /** Keys new in this revision. */
  readonly added: readonly string[];
  /** Keys whose resource changed (content, position, or the file it comes from). */
  readonly updated: readonly string[];
  /** Keys gone in this revision. */
  readonly removed: readonly string[];
}

/** Where the store's messages go. Each message is one line without a severity prefix. */
export interface ConfigStoreLogger {
  /** Rejected documents and files. */
  error(message: string): void;
  /** Validation warnings, conflicts, last good versions kept. */
  warn(message: string): void;
  /** Skipped non-mesh documents and other facts. */
  info(message: string): void;
}

/** Options of {@link ConfigStore}. */
export interface ConfigStoreOptions {
  /** Called once per error of every rejected document or file version (meshd counts these). */
  onRejected?: (issue: ValidationIssue) => void;
  /** Default: each message to stderr, prefixed with its severity. */
  logger?: ConfigStoreLogger;
  /** The mesh root namespace, for the root-namespace rules; default mesh-system. */
  rootNamespace?: string;
  /** Namespace of documents that name none; default `default`. */
  defaultNamespace?: string;
  /** Coalescing delay for bursts of file-system events, in ms; default 50. */
  coalesceMs?: number;
}

const stderrLogger: ConfigStoreLogger = {
  error: (m) => console.error(`error: ${m}`),
  warn: (m) => console.error(`warning: ${m}`),
  info: (m) => console.error(`info: ${m}`),
};

/**
 * The watched, validated configuration of a directory. See the module documentation for the rules.
 */
export class ConfigStore {
  readonly #options: ConfigStoreOptions;
  readonly #log: ConfigStoreLogger;
  readonly #source: DirectorySource | ConfigFeed;
  readonly #index = new ResourceIndex();
  /** What each file was when last processed, so that an event without a change is not re-reported. */
  readonly #fingerprints = new Map<string, string>();
  readonly #listeners = new Set<(change: ConfigChange) => void>();
  #snapshot: ConfigSnapshot = freezeSnapshot(0, []);

  /**
   * @param source the directory to load and watch (meshd's `--configDir`), or another source
   *   (meshd/kube_source) that validates its objects itself
   * @param options callbacks, logger, namespaces and the coalescing delay
   */
  constructor(source: string | ConfigFeed, options: ConfigStoreOptions = {}) {
    this.#options = options;
    this.#log = options.logger ?? stderrLogger;
    this.#source = typeof source === "string"
      ? new DirectorySource(source, {
        onFiles: (files) => this.#sync(files),
        coalesceMs: options.coalesceMs,
        onError: (m) => this.#log.error(m),
      })
      : source;
  }

  /**
   * Loads the directory and starts watching it. Resolves when the initial load is in the snapshot.
   *
   * @throws if the directory does not exist or is not a directory
   */
  start(): Promise<void> {
    const source = this.#source;
    return source instanceof DirectorySource
      ? source.start()
      : source.start((batch) => this.#applyFeed(batch));
  }

  /** Stops watching and releases the watcher; the last snapshot stays readable. Idempotent. */
  stop(): Promise<void> {
    return this.#source.stop();
  }

  /** The resources in force now, frozen; the same object until the next change. */
  snapshot(): ConfigSnapshot {
    return this.#snapshot;
  }

  /**
   * Calls `listener` after every change, once the new snapshot is in place. The push context's
   * debouncer sits behind this; the store itself only coalesces file-system bursts.
   *
   * @returns a function that unsubscribes
   */
  onChange(listener: (change: ConfigChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Applies one batch of a {@link ConfigFeed}: each object's issues reported, one revision for all. */
  #applyFeed(batch: readonly FeedItem[]): void {
    const before = this.#snapshot;
    const touched = new Set<string>();
    for (const { name, result } of batch) {
      if (result !== undefined) this.#report(name, result);
      const changes = this.#index.apply(name, result);
      changes.warnings.forEach((w) => this.#log.warn(w));
      for (const key of [...changes.added, ...changes.updated, ...changes.removed]) touched.add(key);
    }
    this.#publish(before, touched);
  }

  /** Re-reads a batch of files and publishes one revision for all of their changes. */
  async #sync(files: string[]): Promise<void> {
    const before = this.#snapshot;
    const touched = new Set<string>();
    for (const file of files) {
      const read = await readConfigFile(file);
      let result: ValidationResult | undefined;
      if (read.status === "missing") {
        if (!this.#fingerprints.delete(file)) continue;
      } else {
        // Editors touch files without changing them; the same bytes are not validated or reported twice.
        if (this.#fingerprints.get(file) === read.fingerprint) continue;
        this.#fingerprints.set(file, read.fingerprint);
        result = read.status === "text"
          ? validateText(read.text, file, {
            rootNamespace: this.#options.rootNamespace,
            defaultNamespace: this.#options.defaultNamespace ?? "default",
          })
          : {
            resources: [],
            skipped: [],
            issues: [{ file, field: "", message: read.message, severity: "error" }],
          };
        this.#report(file, result);
      }
      const changes = this.#index.apply(file, result);
      changes.warnings.forEach((w) => this.#log.warn(w));
      for (const key of [...changes.added, ...changes.updated, ...changes.removed]) touched.add(key);
    }
    this.#publish(before, touched);
  }

  /** Publishes the index as a new revision if any touched key changed since `before`. */
  #publish(before: ConfigSnapshot, touched: Set<string>): void {
    // Compared with the published snapshot rather than summed per file, so that a key removed by one
    // file and re-added by another in the same batch is one update (or nothing).
    const change: { added: string[]; updated: string[]; removed: string[] } = {
      added: [],
      updated: [],
      removed: [],
    };
    for (const key of [...touched].sort()) {
      const was = entryOf(before, key);
      const now = this.#index.get(key);
      if (was === now) continue;
      if (was === undefined) change.added.push(key);
      else if (now === undefined) change.removed.push(key);
      else change.updated.push(key);
    }
    if (change.added.length + change.updated.length + change.removed.length === 0) return;
    const revision = this.#snapshot.revision + 1;
    // An edit of resources in force (a policy change) keeps the order: the last snapshot's entries
    // with the edited ones replaced, instead of every key sorted again (12,002 resources: ~10 ms a
    // change, before the debounce even starts).
    this.#snapshot = change.added.length + change.removed.length === 0 && before === this.#snapshot
      ? freezeSnapshot(revision, withUpdated(before, change.updated, this.#index))
      : freezeSnapshot(revision, this.#index.entries());
    const event: ConfigChange = Object.freeze({
      revision,
      added: Object.freeze(change.added),
      updated: Object.freeze(change.updated),
      removed: Object.freeze(change.removed),
    });
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (e) {
        this.#log.error(`a config change listener failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  #report(file: string, result: ValidationResult): void {
    for (const issue of result.issues) {
      // formatIssue's line starts with the severity, which the logger adds itself.
      const text = formatIssue(issue).slice(issue.severity.length + 2);
      if (issue.severity === "error") {
        this.#log.error(`rejected: ${text}`);
        try {
          this.#options.onRejected?.(issue);
        } catch (e) {
          this.#log.error(`the onRejected callback failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      } else {
        this.#log.warn(text);
      }
    }
    for (const s of result.skipped) {
      this.#log.info(`${file}:${s.line}: document ${s.documentIndex + 1}: skipped: ${s.reason}`);
    }
  }
}

/** `byKey` is built when first read: meshd's push path reads the sorted entries only. */
function freezeSnapshot(revision: number, entries: ConfigEntry[]): ConfigSnapshot {
  let byKey: Readonly<Record<string, ConfigEntry>> | undefined;
  return Object.freeze({
    revision,
    resources: Object.freeze(entries),
    get byKey(): Readonly<Record<string, ConfigEntry>> {
      if (byKey === undefined) {
        const index: Record<string, ConfigEntry> = Object.create(null);
        for (const e of entries) index[e.key] = e;
        byKey = Object.freeze(index);
      }
      return byKey;
    },
  });
}

/** Where `key` is (or would go) in a snapshot's entries, which are sorted by key in code-unit order. */
function positionOf(entries: readonly ConfigEntry[], key: string): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The entry of `key` in a snapshot, if any (a binary search: byKey is not built for it). */
function entryOf(snapshot: ConfigSnapshot, key: string): ConfigEntry | undefined {
  const entries = snapshot.resources;
  const at = positionOf(entries, key);
  return entries[at]?.key === key ? entries[at] : undefined;
}

/** The snapshot's entries with those of `updated` (keys in force before and after) as the index has them now. */
function withUpdated(
  snapshot: ConfigSnapshot,
  updated: readonly string[],
  index: ResourceIndex,
): ConfigEntry[] {
  const entries = snapshot.resources.slice();
  for (const key of updated) entries[positionOf(entries, key)] = index.get(key)!;
  return entries;
}
