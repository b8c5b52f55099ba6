/**
 * The JWKS resolver (DISCO_JWT_ENABLE_REMOTE_JWKS=false, the default: meshd fetches): for every
 * RequestAuthentication rule with a `jwksUri`, or with an `issuer` but no key source (OIDC
 * discovery: `<issuer>/.well-known/openid-configuration`, then its `jwks_uri`), meshd fetches the key
 * set, pushes it to the proxies inside mesh.v1.JwtProvider, and refreshes it every
 * DISCO_JWT_PUB_KEY_REFRESH_INTERVAL. A failed fetch is retried with exponential backoff (1 s
 * doubling, at most the refresh interval) and the last good key set stays in force: unlike Istio,
 * which then pushes a fake key and so rejects every token, a JWKS outage does not lock users out.
 * Until the first good fetch a rule has no keys, and its tokens get 401.
 *
 * @module
 */
import { parseDuration } from "../../shared/mod.ts";
import { httpGet } from "./http_get.ts";

/** The parts of a jwtRules entry the resolver reads. */
export interface JwksRule {
  issuer?: string;
  jwksUri?: string;
  jwks?: string;
  /** Fetch timeout, a duration such as `5s`; default 5 s (Istio's). */
  timeout?: string;
}

/**
 * The key under which a rule's fetched key set is kept: its `jwksUri`, or `oidc:<issuer>` for OIDC
 * discovery; undefined for inline `jwks` (nothing to fetch).
 */
export function jwksSourceKey(rule: JwksRule): string | undefined {
  if (rule.jwks) return undefined;
  if (rule.jwksUri) return rule.jwksUri;
  return rule.issuer ? `oidc:${rule.issuer}` : undefined;
}

/** What one fetch did, for metrics and logs. */
export interface JwksFetchEvent {
  /** The source key (see {@link jwksSourceKey}). */
  source: string;
  ok: boolean;
  /** Why it failed. */
  error?: string;
  /** A good fetch brought a key set different from the last one. */
  changed?: boolean;
  /** After a failure: ms until the next try. */
  retryInMs?: number;
}

/** Options of {@link JwksResolver}. */
export interface JwksResolverOptions {
  /** DISCO_JWT_PUB_KEY_REFRESH_INTERVAL, ms. */
  refreshIntervalMs: number;
  /** JWKS_RESOLVER_INSECURE_SKIP_VERIFY. */
  insecureSkipVerify: boolean;
  /** First retry delay after a failure, ms; default 1000. */
  retryInitialMs?: number;
  /** A source's key set changed (first good fetch included): rebuild the push context. */
  onChange(): void;
  /** Every network fetch of a key set (OIDC discovery documents included). */
  onFetch?(event: JwksFetchEvent): void;
}

const DEFAULT_TIMEOUT_MS = 5000;

interface SourceState {
  key: string;
  timeoutMs: number;
  lastGood: string | undefined;
  failures: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

function timeoutOf(rule: JwksRule): number {
  const ns = rule.timeout ? parseDuration(rule.timeout) : undefined;
  return ns === undefined || ns <= 0n ? DEFAULT_TIMEOUT_MS : Number(ns / 1_000_000n);
}

/** Checks fetched text is a JSON Web Key Set; returns it compacted, or throws why not. */
function keySetText(text: string): string {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw new Error("the body is not JSON");
  }
  if (!Array.isArray((set as { keys?: unknown })?.keys)) throw new Error('the body has no "keys" list');
  return JSON.stringify(set);
}

/** Fetches, refreshes and keeps the key sets that the current config needs. */
export class JwksResolver {
  readonly #o: JwksResolverOptions;
  readonly #sources = new Map<string, SourceState>();
  #stopped = false;

  /** @param options refresh interval, TLS verification, and where changes and fetches are reported */
  constructor(options: JwksResolverOptions) {
    this.#o = options;
  }

  /**
   * Tracks exactly the sources the given rules need: new ones are fetched now, ones no longer
   * used are dropped (with their keys).
   *
   * @param rules every jwtRules entry of the current config
   */
  sync(rules: Iterable<JwksRule>): void {
    if (this.#stopped) return;
    const wanted = new Map<string, number>();
    for (const r of rules) {
      const key = jwksSourceKey(r);
      if (key !== undefined && !wanted.has(key)) wanted.set(key, timeoutOf(r));
    }
    for (const [key, s] of this.#sources) {
      if (!wanted.has(key)) {
        clearTimeout(s.timer);
        this.#sources.delete(key);
      }
    }
    for (const [key, timeoutMs] of wanted) {
      const s = this.#sources.get(key);
      if (s) s.timeoutMs = timeoutMs;
      else {
        const state: SourceState = { key, timeoutMs, lastGood: undefined, failures: 0, timer: undefined };
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

  /** Stops every timer; nothing is fetched afterwards. */
  stop(): void {
    this.#stopped = true;
    for (const s of this.#sources.values()) clearTimeout(s.timer);
    this.#sources.clear();
  }

  async #fetch(s: SourceState): Promise<string> {
    const get = (url: string) =>
      httpGet(url, { timeoutMs: s.timeoutMs, insecureSkipVerify: this.#o.insecureSkipVerify });
    if (!s.key.startsWith("oidc:")) return keySetText(await get(s.key));
    const issuer = s.key.slice(5).replace(/\/+$/, "");
    const doc = await get(`${issuer}/.well-known/openid-configuration`);
    let jwksUri: unknown;
    try {
      jwksUri = JSON.parse(doc).jwks_uri;
    } catch {
      throw new Error(`${issuer}/.well-known/openid-configuration: the body is not JSON`);
    }
    if (typeof jwksUri !== "string" || jwksUri === "") {
      throw new Error(`${issuer}/.well-known/openid-configuration: no jwks_uri`);
    }
    return keySetText(await get(jwksUri));
  }

  async #refresh(s: SourceState): Promise<void> {
    let text: string;
    try {
      text = await this.#fetch(s);
    } catch (e) {
      if (this.#sources.get(s.key) !== s) return;
      s.failures++;
      const retryInMs = Math.min(
        (this.#o.retryInitialMs ?? 1000) * 2 ** (s.failures - 1),
        this.#o.refreshIntervalMs,
      );
      this.#o.onFetch?.({ source: s.key, ok: false, error: (e as Error).message, retryInMs });
      this.#schedule(s, retryInMs);
      return;
    }
    if (this.#sources.get(s.key) !== s) return;
    s.failures = 0;
    const changed = text !== s.lastGood;
    s.lastGood = text;
    this.#o.onFetch?.({ source: s.key, ok: true, changed });
    this.#schedule(s, this.#o.refreshIntervalMs);
    if (changed) this.#o.onChange();
  }

  #schedule(s: SourceState, ms: number): void {
    if (this.#stopped) return;
    // Timers cannot wait longer than 2^31-1 ms.
    s.timer = setTimeout(() => void this.#refresh(s), Math.min(ms, 2 ** 31 - 1));
    Deno.unrefTimer(s.timer as unknown as number);
  }
}
