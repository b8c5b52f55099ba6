/**
 * Where a JWT is read from: Envoy's jwt_authn extractor as Istio configures it. A provider without
 * any location uses the defaults, `Authorization: Bearer <token>` and then the `access_token` query
 * parameter (Istio's JWTRule reference). Locations are tried in provider order, headers before
 * parameters before cookies; the first token found is the request's token.
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
  /** Header values by lower-case name, repeated headers joined with `,`. */
  headers: Readonly<Record<string, string>>;
  /** The request target (its query holds parameters). */
  path: string;
}

/** A token found by JwtAuthenticator.findToken. */
export interface FoundToken {
  /** The compact JWT. */
  token: string;
  /** Where it was. */
  location: TokenLocation;
  /** Indexes of the providers that read this location. */
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
export function mergedLocations(
  providers: readonly JwtProvider[],
): { location: TokenLocation; providers: number[] }[] {
  const byKey = new Map<string, { location: TokenLocation; providers: number[] }>();
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

function fromHeader(value: string | undefined, prefix: string): string | undefined {
  if (value === undefined) return undefined;
  // Several values of one header: the first that carries the prefix (Envoy reads each value).
  for (const v of value.split(",")) {
    const t = v.trim();
    if (prefix === "") return t || undefined;
    // The Bearer scheme is case-insensitive (RFC 6750); other prefixes are compared as written.
    const head = t.slice(0, prefix.length);
    const same = prefix === BEARER ? head.toLowerCase() === "bearer " : head === prefix;
    if (same && t.length > prefix.length) return t.slice(prefix.length).trim();
  }
  return undefined;
}

function fromParam(path: string, name: string): string | undefined {
  const q = path.indexOf("?");
  if (q < 0) return undefined;
  return new URLSearchParams(path.slice(q + 1)).get(name) || undefined;
}

function fromCookie(cookie: string | undefined, name: string): string | undefined {
  if (cookie === undefined) return undefined;
  for (const part of cookie.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** Reads a location; undefined when it holds no token. */
export function readLocation(l: TokenLocation, source: TokenSource): string | undefined {
  switch (l.kind) {
    case "header":
      return fromHeader(source.headers[l.name], l.prefix);
    case "param":
      return fromParam(source.path, l.name);
    case "cookie":
      return fromCookie(source.headers.cookie, l.name);
  }
}
