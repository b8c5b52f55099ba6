/**
 * Where a JWT is read from: Envoy's jwt_authn extractor as Istio configures it. A provider without
 * any location uses the defaults, `Authorization: Bearer <token>` and the `access_token` query
 * parameter (Istio's JWTRule reference).
 *
 * Every token in every configured location is found, not only the first (Envoy's
 * `ExtractorImpl::extract` in source/extensions/filters/http/jwt_authn/extractor.cc returns one
 * token per header value, parameter and cookie, and `AuthenticatorImpl::doneWithStatus` in
 * authenticator.cc requires all of them to be valid). Each received value of a repeated header is
 * its own token, as Envoy's extractor iterates `headers.get(name)`: two `Authorization` headers are
 * two tokens, both verified. Where Envoy reads only the first value (a repeated parameter, a
 * repeated cookie), every value is read here: a second value is verified, never passed on unchecked.
 * A location that no provider configures is not read, so a token there passes through untouched.
 *
 * @module
 */
import type { JwtProvider } from "./provider.ts";

/** Where a token was found. */
export type TokenLocation =
  | { kind: "header"; name: string; prefix: string }
  | { kind: "param"; name: string }
  | { kind: "cookie"; name: string };

/** What the extractor reads of a request. */
export interface TokenSource {
  /**
   * Header values by lower-case name: a list holds each received value of a repeated header, in
   * order; a string is one value (repeated headers joined with `,`, which then splits them).
   */
  headers: Readonly<Record<string, string | readonly string[]>>;
  /** The request target (its query holds parameters). */
  path: string;
}

/** A token found by {@link findTokens}. */
export interface FoundToken {
  /** The compact JWT. */
  token: string;
  /** Where it was. */
  location: TokenLocation;
  /** Indexes of the providers that read this location. */
  providers: number[];
}

/** A location and the providers (indexes) that read it. */
export interface MergedLocation {
  location: TokenLocation;
  providers: number[];
}

const BEARER = "Bearer ";
const DEFAULT_HEADER: TokenLocation = { kind: "header", name: "authorization", prefix: BEARER };
const DEFAULT_PARAM: TokenLocation = { kind: "param", name: "access_token" };

/** Every location of a provider, in the order they are tried. */
export function locationsOf(p: JwtProvider): TokenLocation[] {
  const headers = (p.fromHeaders ?? []).map((h): TokenLocation => ({
    kind: "header",
    name: h.name.toLowerCase(),
    prefix: h.prefix ?? "",
  }));
  const params = (p.fromParams ?? []).map((name): TokenLocation => ({ kind: "param", name }));
  const cookies = (p.fromCookies ?? []).map((name): TokenLocation => ({ kind: "cookie", name }));
  const all = [...headers, ...params, ...cookies];
  return all.length > 0 ? all : [DEFAULT_HEADER, DEFAULT_PARAM];
}

const keyOf = (l: TokenLocation) => `${l.kind}\u0000${l.name}\u0000${l.kind === "header" ? l.prefix : ""}`;

/** The locations of all providers, deduplicated, each with the providers that read it. */
export function mergedLocations(providers: readonly JwtProvider[]): MergedLocation[] {
  const byKey = new Map<string, MergedLocation>();
  providers.forEach((p, i) => {
    for (const l of locationsOf(p)) {
      const entry = byKey.get(keyOf(l)) ?? { location: l, providers: [] };
      entry.providers.push(i);
      byKey.set(keyOf(l), entry);
    }
  });
  const rank = { header: 0, param: 1, cookie: 2 };
  return [...byKey.values()].sort((a, b) => rank[a.location.kind] - rank[b.location.kind]);
}

function valuesOf(v: string | readonly string[] | undefined): readonly string[] {
  if (v === undefined) return [];
  return typeof v === "string" ? v.split(",") : v;
}

/**
 * The token of one header value, as Envoy's extractor: the text after the prefix wherever the
 * prefix occurs in the value (`find`, not a match at the start), or the whole value without a
 * prefix. The `Bearer` scheme is matched in any case (RFC 6750 §2.1; Envoy compares as written,
 * so this reads more tokens, never fewer).
 */
function fromHeaderValue(value: string, prefix: string): string | undefined {
  const v = value.trim();
  if (prefix === "") return v || undefined;
  const at = prefix === BEARER ? v.toLowerCase().indexOf("bearer ") : v.indexOf(prefix);
  if (at < 0) return undefined;
  return v.slice(at + prefix.length).trim() || undefined;
}

function queryOf(path: string): string | undefined {
  const q = path.indexOf("?");
  if (q < 0) return undefined;
  const h = path.indexOf("#", q);
  return path.slice(q + 1, h < 0 ? undefined : h);
}

function cookieValues(cookie: string | readonly string[] | undefined, name: string): string[] {
  const out: string[] = [];
  for (const header of typeof cookie === "string" ? [cookie] : cookie ?? []) {
    for (const part of header.split(";")) {
      const eq = part.indexOf("=");
      if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
    }
  }
  return out;
}

/** Every token a location holds (empty values are no token), in request order. */
export function readLocation(l: TokenLocation, source: TokenSource): string[] {
  let raw: readonly (string | undefined)[];
  switch (l.kind) {
    case "header":
      raw = valuesOf(source.headers[l.name]).map((v) => fromHeaderValue(v, l.prefix));
      break;
    case "param": {
      const q = queryOf(source.path);
      raw = q === undefined ? [] : new URLSearchParams(q).getAll(l.name);
      break;
    }
    case "cookie":
      raw = cookieValues(source.headers.cookie, l.name);
      break;
  }
  return raw.filter((t): t is string => t !== undefined && t !== "");
}

/**
 * Every token of a request in the given locations: headers, then parameters, then cookies. The
 * same token twice in one location is listed once.
 *
 * @param locations the merged locations of the providers ({@link mergedLocations})
 * @param source the request's headers and target
 */
export function findTokens(locations: readonly MergedLocation[], source: TokenSource): FoundToken[] {
  const found: FoundToken[] = [];
  for (const { location, providers } of locations) {
    for (const token of new Set(readLocation(location, source))) found.push({ token, location, providers });
  }
  return found;
}

/**
 * The query without the named parameters, as Envoy's `JwtParamLocation::removeJwt` when a token
 * taken from a parameter is not forwarded: every pair whose decoded name is one of `names` goes,
 * the other pairs are kept byte for byte.
 *
 * @param query the query with its `?`, or empty
 * @param names parameter names to remove
 * @returns the query with its `?`, or empty when no pair is left
 */
export function withoutParams(query: string, names: readonly string[]): string {
  if (names.length === 0 || query === "") return query;
  // Names decoded as the extractor decodes them (URLSearchParams), so what was read is what goes.
  const kept = query.slice(1).split("&").filter((pair) => {
    const name = new URLSearchParams(pair).keys().next().value;
    return name === undefined || !names.includes(name);
  });
  return kept.length === 0 ? "" : `?${kept.join("&")}`;
}
