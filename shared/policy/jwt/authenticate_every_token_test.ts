/**
 * Every token found is verified, and one invalid token fails the request (Envoy's jwt_authn
 * authenticator.cc: "If a request has multiple tokens, all of them must be valid"). Real tokens
 * signed with jose; table-driven.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { JwtAuthenticator, type JwtOutcome } from "./authenticate.ts";
import type { JwtProvider } from "./provider.ts";
import type { TokenSource } from "./token_location.ts";

const NOW = 1_800_000_000;
const A = "issuer-a";
const B = "issuer-b";

async function issuer(iss: string, kid: string) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: "ES256" }] });
  const sign = (sub: string, claims: Record<string, unknown> = {}) =>
    new SignJWT({ iss, sub, exp: NOW + 3600, ...claims }).setProtectedHeader({ alg: "ES256", kid }).sign(
      privateKey,
    );
  return { jwks, sign };
}
const a = await issuer(A, "ka");
const b = await issuer(B, "kb");
const forger = await issuer(A, "ka");
const good = await a.sign("alice");
const forged = await forger.sign("mallory");
const expired = await a.sign("alice", { exp: NOW - 120 });
const fromB = await b.sign("bob");

const pa = (extra: Partial<JwtProvider> = {}): JwtProvider => ({ issuer: A, jwks: a.jwks, ...extra });
const pb = (extra: Partial<JwtProvider> = {}): JwtProvider => ({ issuer: B, jwks: b.jwks, ...extra });

function summary(o: JwtOutcome): string {
  if (o.status === "none") return "none";
  if (o.status === "invalid") return `401 ${o.location.kind}:${o.location.name}: ${o.reason}`;
  return `valid ${o.principal} tokens=${o.tokens} remove=${[
    ...o.removeHeaders,
    ...o.removeParams.map((n) => `?${n}`),
  ]}`;
}

const cases: [string, JwtProvider[], TokenSource, string][] = [
  [
    "valid Authorization plus a forged ?access_token: 401",
    [pa()],
    { headers: { authorization: `Bearer ${good}` }, path: `/headers?access_token=${forged}` },
    "401 param:access_token: Jwt verification fails",
  ],
  [
    "forged Authorization plus a valid ?access_token: 401",
    [pa()],
    { headers: { authorization: `Bearer ${forged}` }, path: `/headers?access_token=${good}` },
    "401 header:authorization: Jwt verification fails",
  ],
  [
    "two Authorization headers, valid then forged: 401",
    [pa()],
    { headers: { authorization: [`Bearer ${good}`, `Bearer ${forged}`] }, path: "/" },
    "401 header:authorization: Jwt verification fails",
  ],
  [
    "two Authorization headers, valid then expired: 401",
    [pa()],
    { headers: { authorization: [`Bearer ${good}`, `Bearer ${expired}`] }, path: "/" },
    "401 header:authorization: Jwt is expired",
  ],
  [
    "a second access_token parameter, forged: 401",
    [pa()],
    { headers: {}, path: `/?access_token=${good}&access_token=${forged}` },
    "401 param:access_token: Jwt verification fails",
  ],
  [
    "a forged token in a second configured header: 401",
    [pa({ fromHeaders: [{ name: "x-a" }, { name: "x-b" }] })],
    { headers: { "x-a": good, "x-b": forged }, path: "/" },
    "401 header:x-b: Jwt verification fails",
  ],
  [
    "a forged token in a configured cookie: 401",
    [pa({ fromHeaders: [{ name: "authorization", prefix: "Bearer " }], fromCookies: ["session"] })],
    { headers: { authorization: `Bearer ${good}`, cookie: `session=${forged}` }, path: "/" },
    "401 cookie:session: Jwt verification fails",
  ],
  [
    "a token of another provider's issuer at a location only this provider reads: 401",
    [pa({ fromHeaders: [{ name: "x-a" }] }), pb({ fromHeaders: [{ name: "x-b" }] })],
    { headers: { "x-a": fromB }, path: "/" },
    "401 header:x-a: Jwt issuer is not configured",
  ],
  [
    "two valid tokens: valid, both removed",
    [pa()],
    { headers: { authorization: `Bearer ${good}` }, path: `/?access_token=${good}` },
    `valid ${A}/alice tokens=1 remove=authorization,?access_token`,
  ],
  [
    "two issuers at their own locations, both valid: the first is the principal",
    [pa({ fromHeaders: [{ name: "x-a" }] }), pb({ fromHeaders: [{ name: "x-b" }] })],
    { headers: { "x-a": good, "x-b": fromB }, path: "/" },
    `valid ${A}/alice tokens=2 remove=x-a,x-b`,
  ],
  [
    "forwardOriginalToken keeps the token where it was",
    [pa({ forwardOriginalToken: true })],
    { headers: { authorization: `Bearer ${good}` }, path: `/?access_token=${good}` },
    `valid ${A}/alice tokens=1 remove=`,
  ],
  [
    "a forged token in a location no provider configures passes through untouched",
    [pa({ fromHeaders: [{ name: "x-jwt" }] })],
    { headers: { "x-jwt": good, authorization: `Bearer ${forged}` }, path: `/?access_token=${forged}` },
    `valid ${A}/alice tokens=1 remove=x-jwt`,
  ],
  [
    "only unconfigured locations hold tokens: no token",
    [pa({ fromParams: ["t"] })],
    { headers: { authorization: `Bearer ${forged}` }, path: "/" },
    "none",
  ],
];
for (const [name, providers, source, want] of cases) {
  Deno.test(`JwtAuthenticator, every token: ${name}`, async () => {
    assert.equal(summary(await new JwtAuthenticator(providers).authenticate(source, NOW)), want);
  });
}

Deno.test("JwtAuthenticator, every token: header edits of each valid token, the first to set a header wins", async () => {
  const out = (header: string) => [{ header, claim: "sub" }];
  const o = await new JwtAuthenticator([
    pa({ fromHeaders: [{ name: "x-a" }], outputClaimToHeaders: [...out("x-sub"), ...out("x-a-sub")] }),
    pb({ fromHeaders: [{ name: "x-b" }], outputClaimToHeaders: [...out("x-sub"), ...out("x-b-sub")] }),
  ]).authenticate({ headers: { "x-a": good, "x-b": fromB }, path: "/" }, NOW);
  assert.equal(o.status, "valid");
  assert.deepEqual(o.status === "valid" && o.setHeaders, [["x-sub", "alice"], ["x-a-sub", "alice"], [
    "x-b-sub",
    "bob",
  ]]);
});
