/**
 * End-user authentication (RequestAuthentication): the policies seed ("End-user authentication
 * (JWT)", "Errors") with Envoy's jwt_authn behaviour as Istio configures it. Crypto is npm:jose.
 *
 * - No token in any location: the request passes without a principal.
 * - Every token in every configured location is verified (token_location.ts says which are read),
 *   each by the providers whose issuer is its `iss` and that read the location it was found in. One
 *   token that none of them verifies (or whose issuer no provider has) fails the request: 401 with
 *   `WWW-Authenticate: Bearer realm="<url>", error="invalid_token"`, whatever the other tokens are.
 *   Envoy: "If a request has multiple tokens, all of them must be valid" (`doneWithStatus` in
 *   source/extensions/filters/http/jwt_authn/authenticator.cc), so a forged second token never
 *   rides along with a good one to an application that reads the other location.
 * - Algorithms: RS256/384/512, PS256/384/512, ES256/384 and EdDSA. `none` and HMAC are refused;
 *   symmetric (`oct`) keys in a key set are ignored, and private members of keys dropped.
 * - `nbf` and `exp` have 60 s of clock skew, with Envoy's exact inequalities (time_constraint.ts),
 *   checked as Envoy does once the issuer matches and before the signature; `aud` is checked when
 *   the provider lists audiences.
 * - All valid: the first token (headers, then parameters, then cookies) gives the request principal
 *   `<iss>/<sub>` and the claims (with `scope`, `permission` and the provider's
 *   `spaceDelimitedClaims` split into lists). Every token gives its header edits
 *   (`outputPayloadToHeader`, `outputClaimToHeaders`; the first token to set a header wins), and
 *   unless its provider has `forwardOriginalToken` it is removed from where it was taken: the whole
 *   header, or the query parameter (Envoy's `removeJwt` of JwtHeaderLocation and JwtParamLocation).
 *   A token from a cookie stays in place, as in Envoy (its JwtCookieLocation removes nothing).
 *
 * @module
 */
import type { createLocalJWKSet, JSONWebKeySet, JWTPayload } from "jose";
import type { JwtProvider } from "./provider.ts";
import { verifyTimeConstraint } from "./time_constraint.ts";
import {
  findTokens,
  type FoundToken,
  type MergedLocation,
  mergedLocations,
  type TokenLocation,
  type TokenSource,
} from "./token_location.ts";

/** Signature algorithms accepted. */
export const JWT_ALGORITHMS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "EdDSA",
];

/** Seconds of tolerance on `nbf` and `exp` (policies seed, "Limits"). */
export const JWT_CLOCK_SKEW_SECONDS = 60;

/** jose's clock tolerance: so large that its own `nbf`/`exp` checks never fire (see time_constraint.ts). */
const JOSE_TIME_CHECKS_OFF = Number.MAX_SAFE_INTEGER;

const DEFAULT_SPACE_DELIMITED = ["scope", "permission"];
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

/** The outcome of {@link JwtAuthenticator.authenticate}. */
export type JwtOutcome =
  | {
    /** No token in any location: pass, without a principal. */
    status: "none";
  }
  | {
    /** A token (of possibly several) that no provider accepts: answer 401. */
    status: "invalid";
    /** Envoy's text, e.g. `Jwt is expired`, `Jwt verification fails`, `Jwt issuer is not configured`. */
    reason: string;
    /** Where the refused token was. */
    location: TokenLocation;
  }
  | {
    /** Every token found verified. */
    status: "valid";
    /** `<iss>/<sub>` of the first token. */
    principal: string;
    /** The first token's payload, space-delimited claims split into lists (what authorization matches). */
    claims: Record<string, unknown>;
    /** Where the first token was. */
    location: TokenLocation;
    /** How many distinct tokens were verified. */
    tokens: number;
    /** Headers to set on the forwarded request (lower-case names), replacing any received. */
    setHeaders: [string, string][];
    /** Headers (lower-case) to remove from the forwarded request: every value of each. */
    removeHeaders: string[];
    /** Query parameters to remove from the forwarded target (every pair of each name). */
    removeParams: string[];
  };

type Jose = typeof import("jose");
/**
 * npm:jose, loaded by the first token to verify: a proxy whose workloads have no RequestAuthentication
 * never loads it into its data path (proxy/workers/README.md, "Module graph").
 */
let jose: Jose | undefined;

/** One token's verification. */
type TokenResult = { ok: true; payload: JWTPayload; c: CompiledProvider } | { ok: false; reason: string };

interface CompiledProvider {
  p: JwtProvider;
  /** The public keys; imported into {@link keys} by the first token to verify. */
  set: JSONWebKeySet | undefined;
  keys: ReturnType<typeof createLocalJWKSet> | undefined;
  /** Why there are no keys. */
  noKeys: string;
  spaceDelimited: ReadonlySet<string>;
}

/**
 * Why a key set text cannot verify tokens, or undefined when it can (it holds a public RSA, EC or
 * OKP key). The texts are the 401 reasons: `Jwks is not available yet` (empty), `Jwks is not valid
 * JSON`, `Jwks has no keys`, `Jwks has no public RSA, EC or OKP key`.
 */
export function keySetProblem(text: string): string | undefined {
  const set = publicKeySet(text);
  return typeof set === "string" ? set : undefined;
}

function publicKeySet(text: string): JSONWebKeySet | string {
  if (text === "") return "Jwks is not available yet";
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    return "Jwks is not valid JSON";
  }
  const keys = typeof set === "object" && set !== null && "keys" in set ? set.keys : undefined;
  if (!Array.isArray(keys)) return "Jwks has no keys";
  const usable = keys
    .filter((k): k is Record<string, unknown> =>
      k !== null && typeof k === "object" && ["RSA", "EC", "OKP"].includes(String(k.kty))
    )
    .map((k) => Object.fromEntries(Object.entries(k).filter(([name]) => !PRIVATE_MEMBERS.includes(name))));
  return usable.length > 0 ? { keys: usable } : "Jwks has no public RSA, EC or OKP key";
}

function compileProvider(p: JwtProvider): CompiledProvider {
  const set = publicKeySet(p.jwks);
  return {
    p,
    set: typeof set === "string" ? undefined : set,
    keys: undefined,
    noKeys: typeof set === "string" ? set : "",
    spaceDelimited: new Set([...DEFAULT_SPACE_DELIMITED, ...(p.spaceDelimitedClaims ?? [])]),
  };
}

/** Envoy's status texts for jose's errors. */
function reasonOf(e: unknown, { errors }: Jose): string {
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === "aud") return "Audiences in Jwt are not allowed";
    if (e.claim === "iss") return "Jwt issuer is not configured";
    return `Jwt verification fails: ${e.message}`;
  }
  if (e instanceof errors.JWKSNoMatchingKey) return "Jwks doesn't have key to match kid or alg from Jwt";
  if (e instanceof errors.JOSEAlgNotAllowed) return "Jwt verification fails: algorithm not allowed";
  if (e instanceof errors.JWSSignatureVerificationFailed) return "Jwt verification fails";
  if (e instanceof errors.JWTInvalid || e instanceof errors.JWSInvalid) {
    return "Jwt is not in the form of Header.Payload.Signature";
  }
  return `Jwt verification fails: ${(e as Error)?.message ?? String(e)}`;
}

function claimAt(payload: Record<string, unknown>, path: string): unknown {
  let v: unknown = payload;
  for (const k of path.split(".")) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** A claim as a header value: strings, numbers and booleans; lists of them joined with `,`. */
function headerValue(v: unknown): string | undefined {
  const one = (x: unknown) =>
    typeof x === "string" || typeof x === "number" || typeof x === "boolean" ? String(x) : undefined;
  const text = Array.isArray(v)
    ? v.map(one).every((x) => x !== undefined) ? v.map(one).join(",") : undefined
    : one(v);
  // A value that could break the head (CR, LF, NUL) is not written.
  return text !== undefined && !/[\r\n\0]/.test(text) ? text : undefined;
}

/**
 * The providers of the RequestAuthentications that apply to one workload, compiled once per config
 * (key sets imported once and cached): verify any number of requests with it.
 */
export class JwtAuthenticator {
  readonly #providers: CompiledProvider[];
  readonly #locations: MergedLocation[];
  /** Lower-case header names the token locations read (`cookie` when a provider reads cookies). */
  readonly headerNames: readonly string[];
  /** Headers set from verified tokens: stripped from every request first, so a client cannot forge them. */
  readonly outputHeaders: readonly string[];

  /**
   * Compiles providers.
   *
   * @param providers every provider of the applicable RequestAuthentications, in policy order
   */
  constructor(providers: readonly JwtProvider[]) {
    this.#providers = providers.map(compileProvider);
    this.#locations = mergedLocations(providers);
    const names = new Set<string>();
    for (const { location } of this.#locations) {
      if (location.kind === "header") names.add(location.name);
      else if (location.kind === "cookie") names.add("cookie");
    }
    this.headerNames = [...names];
    const out = new Set<string>();
    for (const p of providers) {
      if (p.outputPayloadToHeader) out.add(p.outputPayloadToHeader.toLowerCase());
      for (const c of p.outputClaimToHeaders ?? []) out.add(c.header.toLowerCase());
    }
    this.outputHeaders = [...out];
  }

  /** Whether there is any provider (else every request passes untouched). */
  get empty(): boolean {
    return this.#providers.length === 0;
  }

  /**
   * Finds every token of the request in the providers' locations (synchronous: a request without
   * one costs no promise).
   *
   * @param source the headers the token locations read ({@link headerNames}) and the target
   * @returns each token with where it was and the providers that read it; empty when there is none
   */
  findTokens(source: TokenSource): FoundToken[] {
    return findTokens(this.#locations, source);
  }

  /**
   * Verifies the tokens found by {@link findTokens}: valid only when every one is, invalid at the
   * first that is not (the others are then not verified), `none` for an empty list.
   *
   * @param found the tokens, their locations and the providers that read them
   * @param now the time, seconds since the epoch; default the clock (tests pass their own)
   */
  async verifyTokens(found: readonly FoundToken[], now?: number): Promise<JwtOutcome> {
    if (found.length === 0) return { status: "none" };
    const verified: { found: FoundToken; payload: JWTPayload; c: CompiledProvider }[] = [];
    const done = new Map<string, TokenResult>();
    for (const f of found) {
      const key = `${f.providers.join(",")} ${f.token}`;
      let r = done.get(key);
      if (r === undefined) {
        r = await this.#verify(f.token, f.providers, now);
        done.set(key, r);
      }
      if (!r.ok) return { status: "invalid", reason: r.reason, location: f.location };
      verified.push({ found: f, payload: r.payload, c: r.c });
    }
    return this.#accepted(verified, done.size);
  }

  /**
   * Finds and verifies the request's tokens: {@link findTokens}, then {@link verifyTokens}.
   *
   * @param source the headers the token locations read ({@link headerNames}) and the target
   * @param now the time, seconds since the epoch; default the clock (tests pass their own)
   */
  authenticate(source: TokenSource, now?: number): Promise<JwtOutcome> {
    const found = this.findTokens(source);
    return found.length === 0 ? Promise.resolve({ status: "none" }) : this.verifyTokens(found, now);
  }

  async #verify(token: string, candidates: number[], now: number | undefined): Promise<TokenResult> {
    const j = jose ??= await import("jose");
    let claims: JWTPayload;
    try {
      claims = j.decodeJwt(token);
    } catch (e) {
      return { ok: false, reason: reasonOf(e, j) };
    }
    const iss = claims.iss;
    const late = verifyTimeConstraint(claims, now ?? Date.now() / 1000, JWT_CLOCK_SKEW_SECONDS);
    let reason = "Jwt issuer is not configured";
    for (const i of candidates) {
      const c = this.#providers[i];
      if (c.p.issuer !== iss) continue;
      if (late !== undefined) return { ok: false, reason: late };
      if (!c.set) {
        reason = `Jwt verification fails: ${c.noKeys}`;
        continue;
      }
      c.keys ??= j.createLocalJWKSet(c.set);
      try {
        const { payload } = await j.jwtVerify(token, c.keys, {
          algorithms: JWT_ALGORITHMS as string[],
          issuer: c.p.issuer,
          audience: c.p.audiences?.length ? [...c.p.audiences] : undefined,
          clockTolerance: JOSE_TIME_CHECKS_OFF,
        });
        return { ok: true, payload, c };
      } catch (e) {
        reason = reasonOf(e, j);
      }
    }
    return { ok: false, reason };
  }

  #accepted(
    verified: readonly { found: FoundToken; payload: JWTPayload; c: CompiledProvider }[],
    tokens: number,
  ): JwtOutcome {
    const first = verified[0];
    const claims: Record<string, unknown> = { ...first.payload };
    for (const name of first.c.spaceDelimited) {
      const v = claims[name];
      if (typeof v === "string") claims[name] = v.split(/\s+/).filter((s) => s !== "");
    }
    const setHeaders: [string, string][] = [];
    const set = (name: string, value: string) => {
      if (!setHeaders.some(([n]) => n === name)) setHeaders.push([name, value]);
    };
    const removeHeaders = new Set<string>();
    const removeParams = new Set<string>();
    for (const { found, payload, c } of verified) {
      if (c.p.outputPayloadToHeader) set(c.p.outputPayloadToHeader.toLowerCase(), found.token.split(".")[1]);
      for (const { header, claim } of c.p.outputClaimToHeaders ?? []) {
        const v = headerValue(claimAt(payload as Record<string, unknown>, claim));
        if (v !== undefined) set(header.toLowerCase(), v);
      }
      if (c.p.forwardOriginalToken) continue;
      if (found.location.kind === "header") removeHeaders.add(found.location.name);
      else if (found.location.kind === "param") removeParams.add(found.location.name);
    }
    return {
      status: "valid",
      principal: `${first.payload.iss}/${first.payload.sub ?? ""}`,
      claims,
      location: first.found.location,
      tokens,
      setHeaders,
      removeHeaders: [...removeHeaders],
      removeParams: [...removeParams],
    };
  }
}

/** The `WWW-Authenticate` value of a 401, as Envoy's: `Bearer realm="<url>", error="invalid_token"`. */
export function wwwAuthenticate(url: string): string {
  return `Bearer realm="${url.replace(/["\\\r\n]/g, "")}", error="invalid_token"`;
}
