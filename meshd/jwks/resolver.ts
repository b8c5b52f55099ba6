/**
 * meshd's JWKS resolver: for every RequestAuthentication rule whose keys meshd fetches
 * (DISCO_JWT_ENABLE_REMOTE_JWKS `meshd`; in `hybrid` the external jwksUris; in every mode OIDC
 * discovery, `<issuer>/.well-known/openid-configuration` then its `jwks_uri`), meshd fetches the key
 * set, pushes it to the proxies inside mesh.v1.JwtProvider, and refreshes it every
 * DISCO_JWT_PUB_KEY_REFRESH_INTERVAL. Refresh, backoff and the last good keys are
 * shared/internal/jwks/refresher.ts, shared with the proxy; this module adds OIDC discovery and
 * JWKS_RESOLVER_INSECURE_SKIP_VERIFY.
 *
 * @module
 */
import { type JwksRule as SharedJwksRule, jwksSourceKey, parseDuration } from "../../shared/mod.ts";
import { httpGet } from "../../shared/internal/jwks/http_get.ts";
import {
  type KeySetFetchEvent,
  KeySetRefresher,
  type KeySetSource,
  type KeySetStatus,
} from "../../shared/internal/jwks/refresher.ts";

/** The parts of a jwtRules entry the resolver reads. */
export interface JwksRule extends SharedJwksRule {
  /** Fetch timeout, a duration such as `5s`; default 5 s (Istio's). */
  timeout?: string;
}

/** What one fetch did, for metrics and logs. */
export type JwksFetchEvent = KeySetFetchEvent;

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

/** The `user-agent` of meshd's fetches (a JWKS server's log tells meshd from proxies). */
export const MESHD_JWKS_USER_AGENT = "meshd-jwks-resolver";

const DEFAULT_TIMEOUT_MS = 5000;

/** A rule's fetch timeout, ms: its `timeout`, else Istio's 5 s. */
export function jwksTimeoutMs(rule: { timeout?: string }): number {
  const ns = rule.timeout ? parseDuration(rule.timeout) : undefined;
  return ns === undefined || ns <= 0n ? DEFAULT_TIMEOUT_MS : Number(ns / 1_000_000n);
}

/** Fetches, refreshes and keeps the key sets that meshd fetches. */
export class JwksResolver {
  readonly #refresher: KeySetRefresher;
  readonly #insecureSkipVerify: boolean;

  /** @param options refresh interval, TLS verification, and where changes and fetches are reported */
  constructor(options: JwksResolverOptions) {
    this.#insecureSkipVerify = options.insecureSkipVerify;
    this.#refresher = new KeySetRefresher({
      refreshIntervalMs: options.refreshIntervalMs,
      retryInitialMs: options.retryInitialMs,
      onChange: options.onChange,
      onFetch: options.onFetch,
      fetch: (source) => this.#fetch(source),
    });
  }

  /**
   * Tracks exactly the sources the given rules need: new ones are fetched now, ones no longer
   * used are dropped (with their keys).
   *
   * @param rules the jwtRules entries whose keys meshd fetches
   */
  sync(rules: Iterable<JwksRule>): void {
    const sources: KeySetSource[] = [];
    for (const r of rules) {
      const key = jwksSourceKey(r);
      if (key !== undefined) sources.push({ key, timeoutMs: jwksTimeoutMs(r) });
    }
    this.#refresher.sync(sources);
  }

  /** The last good key set (JSON text) of every tracked source that has one, by source key. */
  keys(): Map<string, string> {
    return this.#refresher.keys();
  }

  /** Where every tracked source stands. */
  status(): KeySetStatus[] {
    return this.#refresher.status();
  }

  /** Stops every timer; nothing is fetched afterwards. */
  stop(): void {
    this.#refresher.stop();
  }

  async #fetch(s: KeySetSource): Promise<string> {
    const get = (url: string) =>
      httpGet(url, {
        timeoutMs: s.timeoutMs,
        insecureSkipVerify: this.#insecureSkipVerify,
        userAgent: MESHD_JWKS_USER_AGENT,
      });
    if (!s.key.startsWith("oidc:")) return await get(s.key);
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
    return await get(jwksUri);
  }
}
