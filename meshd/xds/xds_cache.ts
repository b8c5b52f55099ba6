/**
 * meshd's xDS cache (DISCO_ENABLE_XDS_CACHE, DISCO_XDS_CACHE_SIZE, DISCO_XDS_CACHE_STATS): encoded
 * resources kept across pushes and shared by every stream that sends them, as Istio's XdsCache
 * (pilot/pkg/model/xds_cache.go, typed_xds_cache.go): an LRU bounded in entries, with the metrics
 * xds_cache_reads{type=hit|miss}, xds_cache_evictions{type=clear|size} and xds_cache_size.
 *
 * What differs from Istio, and why: Istio keys an entry by a hash of the inputs it names
 * (DependentConfigs) and drops it when a push's ConfigsUpdated names one of them; an input left out
 * of a key, or a change a push does not report, sends a stale resource (a security bug when it is an
 * authorization policy). Here an entry is keyed by resource type and name (with the scope that makes
 * it differ between proxies: a route configuration's workload, a credential's namespace) and holds the
 * message it encoded; a lookup hits only when the message built from the current push context is
 * deeply equal to it. The encoding is a pure function of the message, so a hit gives byte for byte
 * what encoding again would, whatever changed and whoever reported it. An entry whose message
 * changed is invalidated (evictions{type=clear}), as are entries no push has read for two push
 * contexts (deleted config); the LRU bound evicts the least recently read (evictions{type=size}).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { encodeResource, type ResourceTypeName } from "../../shared/mod.ts";
import type { GeneratedResource } from "./ads_types.ts";

/** Observers of the cache's efficiency; set only with DISCO_XDS_CACHE_STATS (Istio's PILOT_XDS_CACHE_STATS). */
export interface XdsCacheStats {
  /** A lookup: hit (the encoded bytes reused) or miss (encoded now). */
  read(result: "hit" | "miss"): void;
  /** Entries dropped: `clear` (their input changed, or no push read them), `size` (the LRU bound). */
  evicted(reason: "clear" | "size", count: number): void;
  /** The number of entries after a change. */
  size(entries: number): void;
}

/** Options of {@link XdsCache}. */
export interface XdsCacheOptions {
  /** DISCO_XDS_CACHE_SIZE: most entries kept; 0 or less: 20,000 (Istio's fallback). */
  maxEntries: number;
  stats?: XdsCacheStats;
}

interface Entry {
  message: Record<string, unknown>;
  resource: GeneratedResource;
  /** The push context generation that last read it. */
  readAt: number;
  /** Where it is kept: its type's map, under its scope. */
  byScope: Map<string, Entry>;
  scope: string;
}

/** Encodes a message into a generated resource: the bytes and a version that is a hash of them. */
export function encodeGenerated(
  type: ResourceTypeName,
  name: string,
  message: Record<string, unknown>,
): GeneratedResource {
  const body = encodeResource(type, message);
  return { name, version: createHash("sha256").update(body).digest("hex").slice(0, 16), body };
}

/** The LRU of encoded resources; see the module comment for keys and invalidation. */
export class XdsCache {
  readonly #max: number;
  readonly #stats: XdsCacheStats | undefined;
  /**
   * Entries in read order by push, least recent first (a Set keeps insertion order; the first hit of
   * a push re-inserts), and the same entries by type and scope (no key string is built per lookup).
   */
  readonly #order = new Set<Entry>();
  readonly #byType = new Map<string, Map<string, Entry>>();
  #generation = 0;

  /** @param options size bound and observers */
  constructor(options: XdsCacheOptions) {
    this.#max = options.maxEntries > 0 ? options.maxEntries : 20_000;
    this.#stats = options.stats;
  }

  /** Number of entries. */
  get size(): number {
    return this.#order.size;
  }

  /**
   * The encoded resource of `message`: the cached one when the entry of (`type`, `scope`) holds an
   * equal message, else encoded now and kept.
   *
   * @param scope what identifies the resource among proxies: its name, or the name and what else
   *   makes it differ (a workload, a namespace)
   * @throws what encodeResource throws for an invalid message (nothing is cached then)
   */
  get(
    type: ResourceTypeName,
    name: string,
    scope: string,
    message: Record<string, unknown>,
  ): GeneratedResource {
    let byScope = this.#byType.get(type);
    if (byScope === undefined) this.#byType.set(type, byScope = new Map());
    const hit = byScope.get(scope);
    if (hit !== undefined && hit.resource.name === name && sameMessage(hit.message, message)) {
      // The equal message of the current push context: the old one would keep the views of a push
      // context that is gone alive.
      hit.message = message;
      if (hit.readAt !== this.#generation) {
        hit.readAt = this.#generation;
        this.#order.delete(hit);
        this.#order.add(hit);
      }
      this.#stats?.read("hit");
      return hit.resource;
    }
    this.#stats?.read("miss");
    const resource = encodeGenerated(type, name, message);
    if (hit !== undefined) {
      this.#drop(hit);
      this.#stats?.evicted("clear", 1);
    }
    const entry: Entry = { message, resource, readAt: this.#generation, byScope, scope };
    byScope.set(scope, entry);
    this.#order.add(entry);
    if (this.#order.size > this.#max) {
      let over = this.#order.size - this.#max;
      const evicted = over;
      for (const e of this.#order) {
        if (over-- <= 0) break;
        this.#drop(e);
      }
      this.#stats?.evicted("size", evicted);
    }
    this.#stats?.size(this.#order.size);
    return resource;
  }

  #drop(e: Entry): void {
    this.#order.delete(e);
    if (e.byScope.get(e.scope) === e) e.byScope.delete(e.scope);
  }

  /**
   * A new push context is in force: entries no lookup read during the last two are dropped (their
   * resource was deleted, or no proxy asks for it any more).
   */
  nextPush(): void {
    this.#generation++;
    let dropped = 0;
    // Least recently read first: the stale ones are at the front.
    for (const e of this.#order) {
      if (this.#generation - e.readAt <= 2) break;
      this.#drop(e);
      dropped++;
    }
    if (dropped > 0) {
      this.#stats?.evicted("clear", dropped);
      this.#stats?.size(this.#order.size);
    }
  }
}

/**
 * Deep equality of two messages as encodeResource reads them: plain objects (same own keys, equal
 * values), arrays (same length and order), byte arrays, and primitives compared with Object.is (so
 * that -0 and 0, which a double field encodes differently, differ). Anything else is equal only to
 * itself.
 */
export function sameMessage(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameMessage(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  const protoA = Object.getPrototypeOf(a);
  if ((protoA !== Object.prototype && protoA !== null) || Object.getPrototypeOf(b) !== protoA) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  for (const k of keysA) {
    if (!Object.hasOwn(b, k)) return false;
    if (!sameMessage((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}
