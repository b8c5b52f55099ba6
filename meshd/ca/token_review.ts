/**
 * Kubernetes service-account tokens at the CA, as istiod's KubeJWTAuthenticator
 * (security/pkg/server/ca/authenticate/kubeauth/kube_jwt.go and pkg/kube/tokenreview): the token is
 * sent to the API server in a TokenReview (`POST /apis/authentication.k8s.io/v1/tokenreviews`) with
 * `spec.audiences` = TOKEN_AUDIENCES, and accepted only when the answer is `authenticated: true`,
 * carries no `error`, names at least one of TOKEN_AUDIENCES in `status.audiences`, has the group
 * `system:serviceaccounts` and the username `system:serviceaccount:<ns>:<sa>`. The identity is that
 * namespace and service account; nothing in the request can change it.
 *
 * Istio's legacy path (JWT_POLICY=first-party-jwt: a review without audiences, which accepts
 * tokens made for the API server itself) is not offered: a token must be made for the CA.
 *
 * This runs in meshd's main thread, not in the signer Worker: it needs the network (the API server)
 * and the API credentials, and the Worker has neither, so that a bug in CSR parsing cannot reach
 * them. The Worker only ever sees the SPIFFE ID this module's answer gives.
 *
 * Before any review, the token must look like what the API server could accept for the CA: a JWT whose
 * (unverified) `aud` holds one of TOKEN_AUDIENCES and whose `exp` is not past (60 s of clock skew
 * allowed). Anyone can send a bearer token, and each review costs one request of meshd's shared,
 * rate-limited API budget (--orchApiQPS), which the config source's watches need too: garbage and
 * tokens made for something else are refused here without reaching the API server. The review
 * remains the only thing that can accept a token.
 *
 * Positive answers are cached by the SHA-256 of the token for at most {@link DEFAULT_CACHE_TTL_MS}
 * and never past the token's own `exp`, so that a proxy's retries do not each cost a review; a
 * refusal is never cached. A service account deleted after a review is therefore honoured for at
 * most that long.
 *
 * @module
 */
import { decodeJwt, type JWTPayload } from "jose";
import type { AuthResult } from "./authenticate.ts";
import { parseServiceAccountSubject } from "../../shared/internal/ca/bootstrap_tokens.ts";

/** How long a successful review is reused, ms. */
export const DEFAULT_CACHE_TTL_MS = 30_000;
/** At most this many cached reviews; the oldest leaves first. */
export const DEFAULT_CACHE_ENTRIES = 10_000;

/** The TokenReview path of authentication.k8s.io/v1. */
export const TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews";

/** The one call this module makes: meshd's rate-limited ApiClient's `json`. */
export interface TokenReviewApi {
  json<T>(method: string, path: string, req: { body?: unknown }): Promise<T>;
}

/** Options of {@link KubeTokenReviewer}. */
export interface KubeTokenReviewerOptions {
  /** The API client (meshd/kube_control.ts). */
  api: TokenReviewApi;
  /** TOKEN_AUDIENCES. */
  audiences: string[];
  /** The mesh's trust domain. */
  trustDomain: string;
  /** Cache lifetime of a positive review, ms; 0 turns the cache off. */
  cacheTtlMs?: number;
  /** Cache size bound. */
  cacheEntries?: number;
  /** The current time, ms; for tests. */
  now?: () => number;
}

/** The `status` of a TokenReview answer (authentication.k8s.io/v1). */
export interface ReviewStatus {
  authenticated?: boolean;
  error?: string;
  audiences?: string[];
  user?: { username?: string; groups?: string[] };
}

type Accepted = Extract<AuthResult, { ok: true }>;

/** Checks service-account tokens with the TokenReview API. */
export class KubeTokenReviewer {
  readonly #o: KubeTokenReviewerOptions;
  readonly #cache = new Map<string, { result: Accepted; until: number }>();

  /** @param options the API, TOKEN_AUDIENCES, the trust domain and the cache bounds */
  constructor(options: KubeTokenReviewerOptions) {
    if (options.audiences.length === 0) throw new Error("at least one token audience is needed");
    this.#o = options;
  }

  #now(): number {
    return this.#o.now?.() ?? Date.now();
  }

  /**
   * Reviews `token`.
   *
   * @returns the identity, or a reason starting with `service-account token:`; an unreachable API
   *   server is a refusal too (the proxy retries)
   */
  async review(token: string): Promise<AuthResult> {
    const unfit = tokenUnfit(token, this.#o.audiences, this.#now());
    if (unfit) return fail(unfit);
    const key = await sha256(token);
    const hit = this.#cache.get(key);
    if (hit && hit.until > this.#now()) return hit.result;
    if (hit) this.#cache.delete(key);
    let status: ReviewStatus;
    try {
      const answer = await this.#o.api.json<{ status?: ReviewStatus }>("POST", TOKEN_REVIEW_PATH, {
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          spec: { token, audiences: this.#o.audiences },
        },
      });
      status = answer.status ?? {};
    } catch (e) {
      return fail(`the TokenReview failed: ${(e as Error).message}`);
    }
    const result = judgeTokenReview(status, this.#o.audiences, this.#o.trustDomain);
    if (result.ok) this.#remember(key, token, result);
    return result;
  }

  #remember(key: string, token: string, result: Accepted): void {
    const ttl = this.#o.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
    if (ttl <= 0) return;
    const exp = decodeJwt(token).exp!; // tokenUnfit let only JWTs with exp through
    const until = Math.min(this.#now() + ttl, exp * 1000);
    if (until <= this.#now()) return;
    if (this.#cache.size >= (this.#o.cacheEntries ?? DEFAULT_CACHE_ENTRIES)) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(key, { result, until });
  }

  /** How many successful reviews are cached (for tests). */
  get cached(): number {
    return this.#cache.size;
  }
}

/** How far past its `exp` a token is still sent for review, for clock skew with the API server, ms. */
const EXP_SKEW_MS = 60_000;

/**
 * Why `token` cannot be a service-account token for the CA, read without verifying (only to spare
 * the API server); undefined when it may be one.
 *
 * @param audiences TOKEN_AUDIENCES
 * @param nowMs the current time
 */
export function tokenUnfit(token: string, audiences: string[], nowMs: number): string | undefined {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch (e) {
    return `not a JWT (${(e as Error).message})`;
  }
  const aud = typeof claims.aud === "string" ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
  if (!aud.some((a) => audiences.includes(a))) {
    return `made for ${JSON.stringify(aud)}, none of TOKEN_AUDIENCES ${JSON.stringify(audiences)}`;
  }
  if (typeof claims.exp !== "number") return "no exp claim (a legacy token that never expires)";
  if (claims.exp * 1000 + EXP_SKEW_MS < nowMs) {
    return `expired at ${new Date(claims.exp * 1000).toISOString()}`;
  }
  return undefined;
}

/**
 * Istio's getTokenReviewResult, plus the audience check Istio leaves to the API server: the identity
 * of an answer, or why it is refused.
 *
 * @param audiences TOKEN_AUDIENCES
 */
export function judgeTokenReview(status: ReviewStatus, audiences: string[], trustDomain: string): AuthResult {
  if (status.error) return fail(`the API server refused it: ${status.error}`);
  if (status.authenticated !== true) return fail("the API server did not authenticate it");
  const answered = status.audiences ?? [];
  if (!answered.some((a) => audiences.includes(a))) {
    return fail(
      `its audiences ${JSON.stringify(answered)} hold none of TOKEN_AUDIENCES ` +
        JSON.stringify(audiences),
    );
  }
  if (!(status.user?.groups ?? []).includes("system:serviceaccounts")) {
    return fail(`user ${JSON.stringify(status.user?.username)} is not a service account`, true);
  }
  const sa = parseServiceAccountSubject(status.user?.username);
  if (!sa) {
    return fail(
      `username ${JSON.stringify(status.user?.username)} is not system:serviceaccount:<ns>:<sa>`,
      true,
    );
  }
  return { ok: true, method: "k8s-jwt", identity: { trustDomain: trustDomain, ...sa } };
}

function fail(reason: string, idExtraction = false): AuthResult {
  return { ok: false, reason: `service-account token: ${reason}`, idExtraction };
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
