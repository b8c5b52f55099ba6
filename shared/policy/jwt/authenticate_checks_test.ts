/**
 * Each check of JWT authentication with a token that passes it and one that fails it: issuer,
 * audiences, expiry and not-before, keys, the principal, and each token location against a
 * neighbouring one that must not be read. tests/mutation/run.ts plants a bug in each check and
 * expects these rows (with authenticate_test.ts) to catch it.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { JwtAuthenticator, type JwtOutcome } from "./authenticate.ts";
import type { JwtProvider } from "./provider.ts";

const ISS = "https://idp.example.com";
const NOW = 1_800_000_000;

const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
const stranger = await generateKeyPair("RS256");
const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256" };
const jwks = JSON.stringify({ keys: [jwk] });
/** The key set as a careless operator might publish it: the private members included. */
const jwksWithPrivate = JSON.stringify({
  keys: [{ ...(await exportJWK(privateKey)), kid: "k1", alg: "RS256" }],
});

const sign = (claims: Record<string, unknown>, key = privateKey): Promise<string> =>
  new SignJWT({ iss: ISS, sub: "user-1", exp: NOW + 3600, ...claims })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .sign(key);
const provider = (p: Partial<JwtProvider> = {}): JwtProvider => ({ issuer: ISS, jwks, ...p });

interface Source {
  headers: Record<string, string>;
  path: string;
}
const bearer = (t: string): Source => ({ headers: { authorization: `Bearer ${t}` }, path: "/" });

function summary(o: JwtOutcome): string {
  if (o.status === "valid") return `valid ${o.principal}`;
  return o.status === "invalid" ? `invalid: ${o.reason}` : "none";
}

const VALID = `valid ${ISS}/user-1`;

/** [name, providers, the request (from a valid token), want] */
const CASES: [string, JwtProvider[], (valid: string) => Promise<Source> | Source, string][] = [
  // Issuer.
  ["issuer matches", [provider()], bearer, VALID],
  [
    "issuer of no provider",
    [provider()],
    async () => bearer(await sign({ iss: "https://evil.example.com" })),
    "invalid: Jwt issuer is not configured",
  ],
  [
    "issuer of no provider, a keyless provider present",
    [provider({ jwks: "" })],
    async () => bearer(await sign({ iss: "https://evil.example.com" })),
    "invalid: Jwt issuer is not configured",
  ],
  [
    "issuer of a provider without keys, signed with another provider's key",
    [provider({ issuer: "https://other.example.com", jwks: "" }), provider()],
    async () => bearer(await sign({ iss: "https://other.example.com" })),
    "invalid: Jwt verification fails: Jwks is not available yet",
  ],
  // Audiences.
  ["no audiences listed: any aud", [provider()], async () => bearer(await sign({ aud: "anything" })), VALID],
  [
    "aud string listed",
    [provider({ audiences: ["a", "b"] })],
    async () => bearer(await sign({ aud: "a" })),
    VALID,
  ],
  [
    "aud not listed",
    [provider({ audiences: ["a", "b"] })],
    async () => bearer(await sign({ aud: ["c", "d"] })),
    "invalid: Audiences in Jwt are not allowed",
  ],
  [
    "no aud while audiences are listed",
    [provider({ audiences: ["a"] })],
    bearer,
    "invalid: Audiences in Jwt are not allowed",
  ],
  // Expiry and not-before, 60 s of skew either way, at Envoy's exact edges (jwt_verify_lib's
  // verifyTimeConstraint: expired when now > exp + 60, not yet valid when now + 60 < nbf).
  ["exp in 1 s", [provider()], async () => bearer(await sign({ exp: NOW + 1 })), VALID],
  ["exp 1 s ago (skew)", [provider()], async () => bearer(await sign({ exp: NOW - 1 })), VALID],
  ["exp = now - 59: Envoy accepts", [provider()], async () => bearer(await sign({ exp: NOW - 59 })), VALID],
  ["exp = now - 60: Envoy accepts", [provider()], async () => bearer(await sign({ exp: NOW - 60 })), VALID],
  [
    "exp = now - 61: Envoy refuses",
    [provider()],
    async () => bearer(await sign({ exp: NOW - 61 })),
    "invalid: Jwt is expired",
  ],
  ["nbf 1 hour ago", [provider()], async () => bearer(await sign({ nbf: NOW - 3600 })), VALID],
  ["nbf = now + 59: Envoy accepts", [provider()], async () => bearer(await sign({ nbf: NOW + 59 })), VALID],
  ["nbf = now + 60: Envoy accepts", [provider()], async () => bearer(await sign({ nbf: NOW + 60 })), VALID],
  [
    "nbf = now + 61: Envoy refuses",
    [provider()],
    async () => bearer(await sign({ nbf: NOW + 61 })),
    "invalid: Jwt not yet valid",
  ],
  [
    "expired and signed by a stranger: the time is checked before the signature, as in Envoy",
    [provider()],
    async () => bearer(await sign({ exp: NOW - 61 }, stranger.privateKey)),
    "invalid: Jwt is expired",
  ],
  [
    "expired with an unknown issuer: the issuer is checked first",
    [provider()],
    async () => bearer(await sign({ iss: "https://evil.example.com", exp: NOW - 61 })),
    "invalid: Jwt issuer is not configured",
  ],
  // Keys.
  ["private members of a published key are dropped", [provider({ jwks: jwksWithPrivate })], bearer, VALID],
  [
    "signed by a key not in the set, same kid",
    [provider()],
    async () => bearer(await sign({}, stranger.privateKey)),
    "invalid: Jwt verification fails",
  ],
  // The principal.
  [
    "principal without sub",
    [provider()],
    async () => bearer(await sign({ sub: undefined })),
    `valid ${ISS}/`,
  ],
  // Locations.
  [
    "custom header with its prefix",
    [provider({ fromHeaders: [{ name: "X-Token", prefix: "Tok " }] })],
    (t) => ({ headers: { "x-token": `Tok ${t}` }, path: "/" }),
    VALID,
  ],
  [
    "custom header with another prefix",
    [provider({ fromHeaders: [{ name: "X-Token", prefix: "Tok " }] })],
    (t) => ({ headers: { "x-token": `Bearer ${t}` }, path: "/" }),
    "none",
  ],
  [
    "custom header without prefix",
    [provider({ fromHeaders: [{ name: "x-token" }] })],
    (t) => ({ headers: { "x-token": t }, path: "/" }),
    VALID,
  ],
  [
    "a configured header is not read from another header",
    [provider({ fromHeaders: [{ name: "x-token" }] })],
    (t) => ({ headers: { "x-token-2": t }, path: "/" }),
    "none",
  ],
  [
    "Authorization with another scheme",
    [provider()],
    (t) => ({ headers: { authorization: `Basic ${t}` }, path: "/" }),
    "none",
  ],
  ["default parameter", [provider()], (t) => ({ headers: {}, path: `/x?access_token=${t}` }), VALID],
  [
    "a parameter of another name",
    [provider()],
    (t) => ({ headers: {}, path: `/x?token=${t}` }),
    "none",
  ],
  [
    "a configured parameter",
    [provider({ fromParams: ["t"] })],
    (t) => ({ headers: {}, path: `/x?access_token=garbage&t=${t}` }),
    VALID,
  ],
  [
    "a parameter after the fragment is not read",
    [provider()],
    (t) => ({ headers: {}, path: `/x?a=1#&access_token=${t}` }),
    "none",
  ],
  [
    "the same token at a second location, read only by another issuer's provider",
    [
      provider({ fromHeaders: [{ name: "x-a" }] }),
      provider({ issuer: "https://other.example.com", fromHeaders: [{ name: "x-b" }] }),
    ],
    (t) => ({ headers: { "x-a": t, "x-b": t }, path: "/" }),
    "invalid: Jwt issuer is not configured",
  ],
  [
    "a cookie whose name ends with the configured one is not read",
    [provider({ fromCookies: ["session"] })],
    async (t) => ({
      headers: { cookie: `xsession=${await sign({ sub: "forged" })}; session=${t}` },
      path: "/",
    }),
    VALID,
  ],
  [
    "only a cookie of another name",
    [provider({ fromCookies: ["session"] })],
    (t) => ({ headers: { cookie: `session2=${t}` }, path: "/" }),
    "none",
  ],
];

for (const [name, providers, request, want] of CASES) {
  Deno.test(`JwtAuthenticator check: ${name}`, async () => {
    const source = await request(await sign({}));
    assert.equal(summary(await new JwtAuthenticator(providers).authenticate(source, NOW)), want);
  });
}

/** Where the token was decides what is removed from the forwarded request: [headers, parameters]. */
const REMOVED: [string, JwtProvider, (t: string) => Source, [string[], string[]]][] = [
  ["the Authorization header", provider(), bearer, [["authorization"], []]],
  ["the header, forwardOriginalToken", provider({ forwardOriginalToken: true }), bearer, [[], []]],
  [
    "a custom header",
    provider({ fromHeaders: [{ name: "X-Token" }] }),
    (t) => ({ headers: { "x-token": t }, path: "/" }),
    [["x-token"], []],
  ],
  ["a parameter", provider(), (t) => ({ headers: {}, path: `/?access_token=${t}` }), [[], ["access_token"]]],
  [
    "a parameter, forwardOriginalToken",
    provider({ forwardOriginalToken: true }),
    (t) => ({ headers: {}, path: `/?access_token=${t}` }),
    [[], []],
  ],
  [
    "a cookie (left in place, as in Envoy)",
    provider({ fromCookies: ["s"] }),
    (t) => ({ headers: { cookie: `s=${t}` }, path: "/" }),
    [[], []],
  ],
];

for (const [name, p, request, want] of REMOVED) {
  Deno.test(`JwtAuthenticator removes the token from ${name}: ${want.flat().join(", ") || "nothing"}`, async () => {
    const o = await new JwtAuthenticator([p]).authenticate(request(await sign({})), NOW);
    assert.equal(o.status, "valid");
    assert.deepEqual(o.status === "valid" ? [o.removeHeaders, o.removeParams] : o, want);
  });
}

Deno.test("JwtAuthenticator writes no claim header whose value holds CR, LF or NUL", async () => {
  const p = provider({
    outputClaimToHeaders: [
      { header: "x-a", claim: "a" },
      { header: "x-b", claim: "b" },
      { header: "x-c", claim: "c" },
      { header: "x-ok", claim: "ok" },
    ],
  });
  const t = await sign({ a: "1\r\nx-admin: true", b: ["x", "y\n"], c: "z\0", ok: "fine" });
  const o = await new JwtAuthenticator([p]).authenticate(bearer(t), NOW);
  assert.deepEqual(o.status === "valid" ? o.setHeaders : o, [["x-ok", "fine"]]);
});
