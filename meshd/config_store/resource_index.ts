/**
 * The keyed store of validated resources behind meshd's config store (meshd issue, "2. Config
 * store"): which version of each `Kind/namespace/name` is in force, given what every file last
 * validated to. Pure and synchronous, so that the last-good and conflict rules are tested without a
 * file system; the directory watcher feeds it one file at a time.
 *
 * Rules (the issue's "an invalid resource never removes or corrupts valid config"):
 * - a key defined by two files: the file that claimed it first stays in force; the other is
 *   remembered and takes over when the first no longer defines it;
 * - a resource whose document becomes invalid keeps its last good version in force, until its file
 *   validates without errors (then only what the file now defines counts) or is deleted.
 *
 * @module
 */
import type { ValidationResult, ValidResource } from "../../shared/mod.ts";
import type { MeshResource } from "../../shared/mod.ts";

/** Where a resource was defined. */
export interface ConfigSource {
  /** The file, as the config store names it (its directory joined with the relative path). */
  readonly file: string;
  /** Zero-based position of the document in the file. */
  readonly documentIndex: number;
  /** First line (1-based) of the document. */
  readonly line: number;
}

/**
 * A resource as validated, typed by kind, frozen (deeply, at run time). Its spec keeps the generated
 * (mutable) types so that shared's policy functions take it as it is.
 */
export type ConfigResource = Readonly<MeshResource>;

/** Recursively read-only, matching the deep `Object.freeze` applied to every resource. */
export type DeepReadonly<T> = T extends (infer U)[] ? readonly DeepReadonly<U>[]
  : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
  : T;

/** One resource in force (or remembered), immutable; `kind` tells the type of `resource`. */
export type ConfigEntry = EntryOf<MeshResource>;

/** The entry of each member of {@link MeshResource} (distributes over the union). */
type EntryOf<R extends MeshResource> = R extends MeshResource ? {
    /** `Kind/namespace/name`: the identity of a resource; Istio's API-group aliases share a key. */
    readonly key: string;
    /** The resource's kind, e.g. `PeerAuthentication`. */
    readonly kind: R["kind"];
    /** Its namespace (`default` when the document names none). */
    readonly namespace: string;
    /** Its name. */
    readonly name: string;
    /** The resource as validated. */
    readonly resource: Readonly<R>;
    /** Where this version came from. */
    readonly source: ConfigSource;
  }
  : never;

/** What one {@link ResourceIndex.apply} changed among the resources in force. Keys are sorted. */
export interface IndexChanges {
  /** Keys that had no resource in force before and have one now. */
  added: string[];
  /** Keys whose resource in force changed: new content, new position, or another file took over. */
  updated: string[];
  /** Keys that had a resource in force and have none now. */
  removed: string[];
  /** Conflicts, last-good retentions and takeovers, one sentence each, naming key and files. */
  warnings: string[];
}

/** Namespace of a document that names none; validateText names such resources the same way. */
const FALLBACK_NAMESPACE = "default";

/** How validateText begins the message of a YAML syntax error. */
const SYNTAX_ERROR = "invalid YAML:";

/**
 * The key of a resource: `Kind/namespace/name`.
 *
 * @returns e.g. `PeerAuthentication/foo/default`
 */
export function resourceKey(resource: Pick<ValidResource["resource"], "kind" | "metadata">): string {
  return `${resource.kind}/${resource.metadata.namespace ?? FALLBACK_NAMESPACE}/${resource.metadata.name}`;
}

/** One file's version of a key. */
interface Claim {
  file: string;
  entry: ConfigEntry;
  /** The file no longer validates this resource; this is its last good version. */
  lastGood: boolean;
}

/**
 * Resources by key, with every file's claim on each key in the order the claims arrived.
 * The first claim of a key is the one in force.
 */
export class ResourceIndex {
  /** Claims by key, oldest first. */
  #claims = new Map<string, Claim[]>();
  /** Keys claimed by each file. */
  #byFile = new Map<string, Set<string>>();

  /** The resource in force for a key, if any. */
  get(key: string): ConfigEntry | undefined {
    return this.#claims.get(key)?.[0]?.entry;
  }

  /** Every resource in force, sorted by key. */
  entries(): ConfigEntry[] {
    return [...this.#claims.keys()].sort().map((k) => this.#claims.get(k)![0].entry);
  }

  /** Keys of the resources of `file` kept as last good versions (their documents are invalid). */
  lastGoodKeys(file: string): string[] {
    return [...this.#byFile.get(file) ?? []]
      .filter((k) => this.#claimOf(k, file)?.lastGood)
      .sort();
  }

  /**
   * Records what `file` now validates to; `undefined` means the file is gone.
   *
   * @param file the file's name, as used in the result's issues
   * @param result what validateText (or a read failure turned into a file-level issue) found
   * @returns the changes among the resources in force, and the warnings to log
   */
  apply(file: string, result: ValidationResult | undefined): IndexChanges {
    const warnings: string[] = [];
    const oldKeys = this.#byFile.get(file) ?? new Set<string>();
    const touched = new Set<string>(oldKeys);
    const before = new Map<string, ConfigEntry | undefined>();
    const remember = (key: string) => {
      if (!before.has(key)) before.set(key, this.get(key));
    };
    oldKeys.forEach(remember);

    const newKeys = new Set<string>();
    if (result !== undefined) {
      for (const valid of result.resources) {
        const key = resourceKey(valid.resource);
        remember(key);
        touched.add(key);
        if (newKeys.has(key)) {
          const first = this.#claimOf(key, file)!.entry.source;
          warnings.push(
            `${key} is defined twice in ${file} (lines ${first.line} and ${valid.source.line}); ` +
              `the first stays in force`,
          );
          continue;
        }
        newKeys.add(key);
        this.#claim(key, file, valid, warnings);
      }
    }

    // What the file had and no longer validates: dropped, unless its document is now invalid.
    const errors = result?.issues.filter((i) => i.severity === "error") ?? [];
    // A YAML syntax error can swallow the documents after it (an unclosed bracket, a broken `---`), so
    // document positions no longer say which resource broke: like a file-level error, it keeps them all.
    const fileLevelError = errors.some((i) =>
      i.documentIndex === undefined || i.message.startsWith(SYNTAX_ERROR)
    );
    const invalidDocuments = new Set(errors.map((i) => i.documentIndex));
    const invalidResources = new Set(errors.map((i) => i.resource).filter((r) => r !== undefined));
    for (const key of oldKeys) {
      if (newKeys.has(key)) continue;
      const claim = this.#claimOf(key, file)!;
      const { entry } = claim;
      // Once kept, a last good version stays until the file is fixed: the document that broke it
      // may move or be renamed while the user edits, and can no longer be told apart reliably.
      const keep = claim.lastGood ? errors.length > 0 : fileLevelError ||
        invalidDocuments.has(entry.source.documentIndex) ||
        invalidResources.has(`${entry.kind} ${entry.namespace}/${entry.name}`);
      if (keep) {
        if (!claim.lastGood) {
          claim.lastGood = true;
          warnings.push(
            `${key}: its document in ${file} is now invalid; the last good version ` +
              `(document ${entry.source.documentIndex + 1}, line ${entry.source.line}) stays in force ` +
              `until the file is fixed or deleted`,
          );
        }
        newKeys.add(key);
      } else {
        this.#unclaim(key, file);
      }
    }
    if (newKeys.size > 0) this.#byFile.set(file, newKeys);
    else this.#byFile.delete(file);

    const changes: IndexChanges = { added: [], updated: [], removed: [], warnings };
    for (const key of [...touched].sort()) {
      const was = before.get(key);
      const now = this.get(key);
      if (was === now) continue;
      if (was === undefined) changes.added.push(key);
      else if (now === undefined) changes.removed.push(key);
      else {
        changes.updated.push(key);
        if (was.source.file !== now.source.file && !this.#hasClaim(key, was.source.file)) {
          warnings.push(
            `${key}: ${now.source.file} is now in force (${was.source.file} no longer defines it)`,
          );
        }
      }
    }
    return changes;
  }

  #claimOf(key: string, file: string): Claim | undefined {
    return this.#claims.get(key)?.find((c) => c.file === file);
  }

  #hasClaim(key: string, file: string): boolean {
    return this.#claimOf(key, file) !== undefined;
  }

  /** Sets `file`'s version of `key`, keeping its place in the queue of claims. */
  #claim(key: string, file: string, valid: ValidResource, warnings: string[]): void {
    const claims = this.#claims.get(key) ?? [];
    this.#claims.set(key, claims);
    const existing = claims.find((c) => c.file === file);
    const fresh = makeEntry(key, valid);
    if (existing) {
      existing.lastGood = false;
      // The same object when nothing changed, so that identity tells the config store "unchanged".
      if (sameEntry(existing.entry, fresh)) return;
      existing.entry = fresh;
      if (claims[0] === existing) return;
    } else {
      claims.push({ file, entry: fresh, lastGood: false });
      if (claims.length === 1) return;
    }
    const winner = claims[0].entry.source;
    warnings.push(
      `${key} is defined in both ${winner.file} (line ${winner.line}) and ${file} ` +
        `(line ${valid.source.line}); ${winner.file} was loaded first and stays in force, ` +
        `${file} is ignored until ${winner.file} no longer defines it`,
    );
  }

  #unclaim(key: string, file: string): void {
    const claims = this.#claims.get(key)?.filter((c) => c.file !== file) ?? [];
    if (claims.length > 0) this.#claims.set(key, claims);
    else this.#claims.delete(key);
  }
}

function makeEntry(key: string, valid: ValidResource): ConfigEntry {
  const { source } = valid;
  // A copy, so that freezing never reaches into the caller's validation result.
  const resource = deepFreeze(structuredClone(valid.resource));
  return Object.freeze({
    key,
    kind: resource.kind,
    namespace: resource.metadata.namespace ?? FALLBACK_NAMESPACE,
    name: resource.metadata.name,
    resource,
    source: Object.freeze({ file: source.file, documentIndex: source.documentIndex, line: source.line }),
  } as EntryOf<typeof resource>);
}

function sameEntry(a: ConfigEntry, b: ConfigEntry): boolean {
  return a.source.file === b.source.file && a.source.documentIndex === b.source.documentIndex &&
    a.source.line === b.source.line && canonicalJson(a.resource) === canonicalJson(b.resource);
}

/** JSON with object keys sorted, so that reordered keys in YAML do not count as a change. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
        : v,
  );
}

/** Freezes an object graph (parsed YAML: plain objects and arrays, no cycles). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
