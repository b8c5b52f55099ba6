import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from "jose";
import { JwtAuthenticator, type JwtOutcome, wwwAuthenticate } from "./authenticate.ts";
import type { JwtProvider } from "./provider.ts";

const ISS = "testing@secure.istio.io";
const NOW = 1_800_000_000;

interface Signer {
  alg: string;
  jwk: JWK;
  sign(claims: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
}

async function signer(alg: string, kid: string): Promise<Signer & { pem: string }> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg };
  return {
    alg,
    jwk,
    pem: await exportSPKI(publicKey),
    sign: (claims, header = {}) =>
      new SignJWT(claims).setProtectedHeader({ alg, kid, ...header }).sign(privateKey),
  };
}

const ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];
const signers = new Map<string, Signer & { pem: string }>();
for (const alg of ALGS) signers.set(alg, await signer(alg, `k-${alg}`));
const rs = signers.get("RS256")!;
const jwks = JSON.stringify({ keys: [...signers.values()].map((s) => s.jwk) });
const provider = (p: Partial<JwtProvider> = {}): JwtProvider => ({ issuer: ISS, jwks, ...p });
const claims = (c: Record<string, unknown> = {}) => ({ iss: ISS, sub: "user-1", exp: NOW + 3600, ...c });
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` }, path: "/headers" });

async function outcome(providers: JwtProvider[], source: { headers: Record<string, string>; path: string }) {
  return await new JwtAuthenticator(providers).authenticate(source, NOW);
}
function summary(o: JwtOutcome): string {
  return o.status === "valid"
    ? `valid ${o.principal}`
    : o.status === "invalid"
    ? `invalid: ${o.reason}`
    : "none";
}

for (const alg of ALGS) {
  Deno.test(`JwtAuthenticator accepts ${alg}`, async () => {
    const t = await signers.get(alg)!.sign(claims());
    assert.equal(summary(await outcome([provider()], bearer(t))), `valid ${ISS}/user-1`);
  });
}

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64url");

interface Case {
  providers?: JwtProvider[];
  source: { headers: Record<string, string>; path: string };
}
const cases: [string, () => Case | Promise<Case>, string][] = [
  ["no token passes without principal", () => ({ source: { headers: {}, path: "/" } }), "none"],
  ["alg none is refused", () => ({
    source: bearer(`${b64('{"alg":"none"}')}.${b64(JSON.stringify(claims()))}.`),
  }), "invalid: Jwt verification fails: algorithm not allowed"],
  ["HS256 keyed with the public key is refused", () => {
    const head = b64(JSON.stringify({ alg: "HS256", kid: "k-RS256" }));
    const body = b64(JSON.stringify(claims()));
    const sig = createHmac("sha256", rs.pem).update(`${head}.${body}`).digest("base64url");
    return { source: bearer(`${head}.${body}.${sig}`) };
  }, "invalid: Jwt verification fails: algorithm not allowed"],
  ["a bad signature", async () => {
    const t = await rs.sign(claims());
    return { source: bearer(t.slice(0, -4) + (t.endsWith("AAAA") ? "BBBB" : "AAAA")) };
  }, "invalid: Jwt verification fails"],
  [
    "garbage",
    () => ({ source: bearer("not-a-jwt") }),
    "invalid: Jwt is not in the form of Header.Payload.Signature",
  ],
  [
    "expired 59 s ago is accepted (60 s skew)",
    async () => ({ source: bearer(await rs.sign(claims({ exp: NOW - 59 }))) }),
    `valid ${ISS}/user-1`,
  ],
  [
    "expired 61 s ago is refused",
    async () => ({ source: bearer(await rs.sign(claims({ exp: NOW - 61 }))) }),
    "invalid: Jwt is expired",
  ],
  [
    "nbf 59 s ahead is accepted",
    async () => ({ source: bearer(await rs.sign(claims({ nbf: NOW + 59 }))) }),
    `valid ${ISS}/user-1`,
  ],
  [
    "nbf 61 s ahead is refused",
    async () => ({ source: bearer(await rs.sign(claims({ nbf: NOW + 61 }))) }),
    "invalid: Jwt not yet valid",
  ],
  [
    "unknown issuer",
    async () => ({ source: bearer(await rs.sign(claims({ iss: "other" }))) }),
    "invalid: Jwt issuer is not configured",
  ],
  ["audience accepted", async () => ({
    providers: [provider({ audiences: ["a", "b"] })],
    source: bearer(await rs.sign(claims({ aud: ["x", "b"] }))),
  }), `valid ${ISS}/user-1`],
  ["audience refused", async () => ({
    providers: [provider({ audiences: ["a"] })],
    source: bearer(await rs.sign(claims({ aud: "x" }))),
  }), "invalid: Audiences in Jwt are not allowed"],
  [
    "unknown kid",
    async () => ({ source: bearer(await rs.sign(claims(), { kid: "nope" })) }),
    "invalid: Jwks doesn't have key to match kid or alg from Jwt",
  ],
  [
    "access_token parameter",
    async () => ({ source: { headers: {}, path: `/x?a=1&access_token=${await rs.sign(claims())}` } }),
    `valid ${ISS}/user-1`,
  ],
  ["Authorization wins over access_token", async () => ({
    source: {
      headers: { authorization: `Bearer ${await rs.sign(claims({ sub: "h" }))}` },
      path: `/x?access_token=${await rs.sign(claims({ sub: "p" }))}`,
    },
  }), `valid ${ISS}/h`],
  [
    "bearer scheme in any case",
    async () => ({ source: { headers: { authorization: `bearer ${await rs.sign(claims())}` }, path: "/" } }),
    `valid ${ISS}/user-1`,
  ],
  ["custom header and prefix", async () => ({
    providers: [provider({ fromHeaders: [{ name: "X-Jwt-Assertion", prefix: "Tok " }] })],
    source: { headers: { "x-jwt-assertion": `Tok ${await rs.sign(claims())}` }, path: "/" },
  }), `valid ${ISS}/user-1`],
  ["explicit locations replace the defaults", async () => ({
    providers: [provider({ fromHeaders: [{ name: "x-jwt" }] })],
    source: bearer(await rs.sign(claims())),
  }), "none"],
  ["fromParams", async () => ({
    providers: [provider({ fromParams: ["my_token"] })],
    source: { headers: {}, path: `/?my_token=${await rs.sign(claims())}` },
  }), `valid ${ISS}/user-1`],
  ["fromCookies", async () => ({
    providers: [provider({ fromCookies: ["session"] })],
    source: { headers: { cookie: `a=b; session=${await rs.sign(claims())}` }, path: "/" },
  }), `valid ${ISS}/user-1`],
  ["no keys yet: refused, never accepted", async () => ({
    providers: [provider({ jwks: "" })],
    source: bearer(await rs.sign(claims())),
  }), "invalid: Jwt verification fails: Jwks is not available yet"],
  ["symmetric keys in the set are ignored", async () => ({
    providers: [provider({ jwks: JSON.stringify({ keys: [{ kty: "oct", k: "c2VjcmV0" }] }) })],
    source: bearer(await rs.sign(claims())),
  }), "invalid: Jwt verification fails: Jwks has no public RSA, EC or OKP key"],
  ["two RequestAuthentications merge: the second issuer is accepted too", async () => ({
    providers: [provider({ issuer: "other", jwks: "" }), provider()],
    source: bearer(await rs.sign(claims())),
  }), `valid ${ISS}/user-1`],
];
for (const [name, make, want] of cases) {
  Deno.test(`JwtAuthenticator: ${name}`, async () => {
    const { providers, source } = await make();
    assert.equal(summary(await outcome(providers ?? [provider()], source)), want);
  });
}

Deno.test("JwtAuthenticator: header edits, claims for authorization", async () => {
  const p = provider({
    outputPayloadToHeader: "x-jwt-payload",
    outputClaimToHeaders: [{ header: "x-sub", claim: "sub" }, { header: "x-level", claim: "nested.level" }, {
      header: "x-groups",
      claim: "groups",
    }],
    spaceDelimitedClaims: ["roles"],
  });
  const token = await rs.sign(
    claims({ scope: "read write", roles: "a b", groups: ["g1", "g2"], nested: { level: 3 } }),
  );
  const o = await new JwtAuthenticator([p]).authenticate(bearer(token), NOW);
  assert.equal(o.status, "valid");
  if (o.status !== "valid") return;
  assert.deepEqual(o.setHeaders, [
    ["x-jwt-payload", token.split(".")[1]],
    ["x-sub", "user-1"],
    ["x-level", "3"],
    ["x-groups", "g1,g2"],
  ]);
  assert.deepEqual(o.removeHeaders, ["authorization"]);
  assert.deepEqual(o.claims.scope, ["read", "write"]);
  assert.deepEqual(o.claims.roles, ["a", "b"]);
  const kept = await new JwtAuthenticator([provider({ forwardOriginalToken: true })]).authenticate(
    bearer(token),
    NOW,
  );
  assert.deepEqual(kept.status === "valid" && kept.removeHeaders, []);
  const a = new JwtAuthenticator([p]);
  assert.deepEqual(a.headerNames, ["authorization"]);
  assert.deepEqual(a.outputHeaders, ["x-jwt-payload", "x-sub", "x-level", "x-groups"]);
});

Deno.test("wwwAuthenticate is Envoy's", () => {
  assert.equal(
    wwwAuthenticate("http://httpbin.foo:8000/headers"),
    'Bearer realm="http://httpbin.foo:8000/headers", error="invalid_token"',
  );
});
