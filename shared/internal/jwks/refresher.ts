/**
 * Fetch, refresh, backoff and last good keys for a set of JWKS sources: the part of meshd's JWKS
 * resolver (DISCO_JWT_ENABLE_REMOTE_JWKS meshd/hybrid) and the proxy's JWKS fetcher (hybrid/proxy)
 * that is the same on both sides, after Istio's jwks_resolver.go and Envoy's remote_jwks (async
 * fetch, cache_duration, failed_refetch_duration). Each side says how one source is fetched.
 *
 * A source is fetched when it first appears, then every refresh interval. A failure (the fetch
 * throws, or the body is not a JSON Web Key Set) is retried after `retryInitialMs` (1 s), doubling
 * up to the refresh interval, and the last good key set stays in force: unlike Istio, which then
 * pushes a fake key, an outage of the identity provider does not lock users out.
 *
 * @module
 */

/** One source to keep fresh. */
export interface KeySetSource {
  /** The source key (`jwksSourceKey` in shared: a jwksUri, or `oidc:<issuer>`). */
  key: string;
  /** One fetch's limit, ms. */
  timeoutMs: number;
  /** Refresh every this many ms; default the refresher's. */
  refreshIntervalMs?: number;
}

/** What one fetch did, for metrics and logs. */
export interface KeySetFetchEvent {
  /** The source key. */
  source: string;
  ok: boolean;
  /** Why it failed. */
  error?: string;
  /** A good fetch brought a key set different from the last one. */
  changed?: boolean;
  /** Whether a good key set is in force after this fetch (after a failure: an earlier one, or none). */
  hasKeys: boolean;
  /** After a failure: ms until the next try. */
  retryInMs?: number;
}

/** Where one source stands, for a status page (meshd debug, the proxy's /config_dump). */
export interface KeySetStatus {
  source: string;
  /** `FETCHING` before the first answer, `OK` after a good fetch, `FAILING` after a failed one. */
  state: "FETCHING" | "OK" | "FAILING";
  /** Whether a good key set is in force (`FAILING` with keys: the last good ones). */
  hasKeys: boolean;
  /** How many keys the set in force holds. */
  keyCount: number;
  /** ISO times of the last good fetch and of the last failure, when any. */
  lastSuccess?: string;
  lastFailure?: string;
  /** The last failure's reason. */
  lastError?: string;
  /** Failures since the last good fetch. */
  consecutiveFailures: number;
  /** ISO time of the next fetch. */
  nextFetch?: string;
}

/**
 * What a failed fetch leaves in force, for logs: "keeping the last good key set" only when there is
 * one, else "no good key set yet" (none was fetched since this process started).
 */
export function keptAfterFailure(e: Pick<KeySetFetchEvent, "hasKeys">): string {
  return e.hasKeys ? "keeping the last good key set" : "no good key set yet";
}

/** Options of {@link KeySetRefresher}. */
export interface KeySetRefresherOptions {
  /** Default refresh interval, ms. */
  refreshIntervalMs: number;
  /** First retry delay after a failure, ms; default 1000. */
  retryInitialMs?: number;
  /** Fetches a source's key set; the text is checked here. Throws why not. */
  fetch(source: KeySetSource): Promise<string>;
  /** A source's key set changed (first good fetch included). */
  onChange(): void;
  /** Every fetch. */
  onFetch?(event: KeySetFetchEvent): void;
}

interface SourceState extends KeySetSource {
  lastGood: string | undefined;
  keyCount: number;
  failures: number;
  lastSuccess?: number;
  lastFailure?: number;
  lastError?: string;
  nextFetch?: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Checks fetched text is a JSON Web Key Set.
 *
 * @returns the set compacted (so that a reformatted body is no change) and its number of keys
 * @throws Error saying what is wrong: not JSON, no `keys` list
 */
export function parseKeySet(text: string): { text: string; keyCount: number } {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw new Error("the body is not JSON");
  }
  const keys = typeof set === "object" && set !== null && "keys" in set ? set.keys : undefined;
  if (!Array.isArray(keys)) throw new Error('the body has no "keys" list');
  return { text: JSON.stringify(set), keyCount: keys.length };
}

/** Fetches, refreshes and keeps the key sets of the sources it is told to track. */
export class KeySetRefresher {
  readonly #o: KeySetRefresherOptions;
  readonly #sources = new Map<string, SourceState>();
  #stopped = false;

  /** @param options how to fetch a source, the intervals, and where changes and fetches are reported */
  constructor(options: KeySetRefresherOptions) {
    this.#o = options;
  }

  /**
   * Tracks exactly these sources: new ones are fetched now, ones no longer given are dropped (with
   * their keys), and the timeout and interval of the others are updated (from their next fetch).
   */
  sync(sources: Iterable<KeySetSource>): void {
    if (this.#stopped) return;
    const wanted = new Map<string, KeySetSource>();
    for (const s of sources) if (!wanted.has(s.key)) wanted.set(s.key, s);
    for (const [key, s] of this.#sources) {
      if (!wanted.has(key)) {
        clearTimeout(s.timer);
        this.#sources.delete(key);
      }
    }
    for (const [key, source] of wanted) {
      const s = this.#sources.get(key);
      if (s) {
        s.timeoutMs = source.timeoutMs;
        s.refreshIntervalMs = source.refreshIntervalMs;
      } else {
        const state: SourceState = {
          ...source,
          lastGood: undefined,
          keyCount: 0,
          failures: 0,
          timer: undefined,
        };
        this.#sources.set(key, state);
        void this.#refresh(state);
      }
    }
  }

  /** The last good key set (JSON text) of every tracked source that has one, by source key. */
  keys(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [key, s] of this.#sources) if (s.lastGood !== undefined) out.set(key, s.lastGood);
    return out;
  }

  /** Where every tracked source stands, sorted by source key. */
  status(): KeySetStatus[] {
    const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
    return [...this.#sources.values()].sort((a, b) => (a.key < b.key ? -1 : 1)).map((s) => ({
      source: s.key,
      state: s.failures > 0 ? "FAILING" : s.lastSuccess === undefined ? "FETCHING" : "OK",
      hasKeys: s.lastGood !== undefined,
      keyCount: s.keyCount,
      lastSuccess: iso(s.lastSuccess),
      lastFailure: iso(s.lastFailure),
      lastError: s.lastError,
      consecutiveFailures: s.failures,
      nextFetch: iso(s.nextFetch),
    }));
  }

  /** Stops every timer; nothing is fetched afterwards. */
  stop(): void {
    this.#stopped = true;
    for (const s of this.#sources.values()) clearTimeout(s.timer);
    this.#sources.clear();
  }

  async #refresh(s: SourceState): Promise<void> {
    s.nextFetch = undefined;
    const interval = s.refreshIntervalMs ?? this.#o.refreshIntervalMs;
    let set: { text: string; keyCount: number };
    try {
      set = parseKeySet(await this.#o.fetch(s));
    } catch (e) {
      if (this.#sources.get(s.key) !== s) return;
      s.failures++;
      s.lastFailure = Date.now();
      s.lastError = (e as Error).message;
      const retryInMs = Math.min((this.#o.retryInitialMs ?? 1000) * 2 ** (s.failures - 1), interval);
      this.#o.onFetch?.({
        source: s.key,
        ok: false,
        error: s.lastError,
        retryInMs,
        hasKeys: s.lastGood !== undefined,
      });
      this.#schedule(s, retryInMs);
      return;
    }
    if (this.#sources.get(s.key) !== s) return;
    s.failures = 0;
    s.lastSuccess = Date.now();
    const changed = set.text !== s.lastGood;
    s.lastGood = set.text;
    s.keyCount = set.keyCount;
    this.#o.onFetch?.({ source: s.key, ok: true, changed, hasKeys: true });
    this.#schedule(s, interval);
    if (changed) this.#o.onChange();
  }

  #schedule(s: SourceState, ms: number): void {
    if (this.#stopped) return;
    // Timers cannot wait longer than 2^31-1 ms.
    const wait = Math.min(ms, 2 ** 31 - 1);
    s.nextFetch = Date.now() + wait;
    s.timer = setTimeout(() => void this.#refresh(s), wait);
    Deno.unrefTimer(s.timer as unknown as number);
  }
}
