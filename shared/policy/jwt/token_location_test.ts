/** Which tokens the extractor reads, and how a parameter token is removed: pure, table-driven. */
import assert from "node:assert/strict";
import type { JwtProvider } from "./provider.ts";
import { findTokens, mergedLocations, type TokenSource, withoutParams } from "./token_location.ts";

const p = (extra: Partial<JwtProvider> = {}): JwtProvider => ({ issuer: "i", jwks: "", ...extra });

/** `kind:name=token` for each token found. */
function found(providers: JwtProvider[], source: TokenSource): string[] {
  return findTokens(mergedLocations(providers), source).map((f) =>
    `${f.location.kind}:${f.location.name}=${f.token}`
  );
}

const cases: [string, JwtProvider[], TokenSource, string[]][] = [
  ["no token", [p()], { headers: {}, path: "/" }, []],
  [
    "default locations: Authorization and access_token, both read",
    [p()],
    { headers: { authorization: "Bearer h" }, path: "/x?access_token=q" },
    ["header:authorization=h", "param:access_token=q"],
  ],
  [
    "two Authorization headers are two tokens (Envoy iterates every value)",
    [p()],
    { headers: { authorization: ["Bearer a", "Bearer b"] }, path: "/" },
    ["header:authorization=a", "header:authorization=b"],
  ],
  [
    "repeated headers joined with , are split back",
    [p()],
    { headers: { authorization: "Bearer a,Bearer b" }, path: "/" },
    ["header:authorization=a", "header:authorization=b"],
  ],
  [
    "one header value with a comma after the token stays one (bad) token",
    [p()],
    { headers: { authorization: ["Bearer a,b"] }, path: "/" },
    ["header:authorization=a,b"],
  ],
  [
    "the same token twice in one location is one token",
    [p()],
    { headers: { authorization: ["Bearer a", "Bearer a"] }, path: "/" },
    ["header:authorization=a"],
  ],
  [
    "a repeated parameter: every value (Envoy reads the first)",
    [p()],
    { headers: {}, path: "/?access_token=a&x=1&access_token=b" },
    ["param:access_token=a", "param:access_token=b"],
  ],
  [
    "a percent-encoded parameter name is the parameter",
    [p()],
    { headers: {}, path: "/?access%5Ftoken=a" },
    ["param:access_token=a"],
  ],
  ["an empty parameter is no token", [p()], { headers: {}, path: "/?access_token=" }, []],
  [
    "prefix found anywhere in the value, as Envoy's find()",
    [p()],
    { headers: { authorization: "Basic x Bearer t" }, path: "/" },
    ["header:authorization=t"],
  ],
  [
    "a header without the prefix is no token",
    [p()],
    { headers: { authorization: "Basic dXNlcjpwYXNz" }, path: "/" },
    [],
  ],
  [
    "explicit locations replace the defaults: Authorization and access_token are not read",
    [p({ fromHeaders: [{ name: "X-Jwt" }] })],
    { headers: { authorization: "Bearer a", "x-jwt": "b" }, path: "/?access_token=c" },
    ["header:x-jwt=b"],
  ],
  [
    "every configured location of several providers",
    [p({ fromHeaders: [{ name: "x-a" }] }), p({ issuer: "j", fromParams: ["t"], fromCookies: ["s"] })],
    { headers: { "x-a": "a", cookie: ["k=v; s=c1", "s=c2"] }, path: "/?t=b" },
    ["header:x-a=a", "param:t=b", "cookie:s=c1", "cookie:s=c2"],
  ],
];
for (const [name, providers, source, want] of cases) {
  Deno.test(`findTokens: ${name}`, () => assert.deepEqual(found(providers, source), want));
}

const removals: [string, string, string[], string][] = [
  ["the only parameter", "?access_token=a", ["access_token"], ""],
  [
    "every occurrence, others byte for byte",
    "?a=%2F&access_token=x&b&access_token=y",
    ["access_token"],
    "?a=%2F&b",
  ],
  ["an encoded name", "?access%5Ftoken=x&z=1", ["access_token"], "?z=1"],
  ["nothing to remove", "?a=1", [], "?a=1"],
  ["no query", "", ["access_token"], ""],
  ["a prefix of the name stays", "?access_tokens=x", ["access_token"], "?access_tokens=x"],
];
for (const [name, query, names, want] of removals) {
  Deno.test(`withoutParams: ${name}`, () => assert.equal(withoutParams(query, names), want));
}
