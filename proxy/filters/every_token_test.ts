/**
 * Every token is verified on the inbound listener, with the exact request bytes, real httpbin
 * (gunicorn) and tokens signed with jose: a forged second token (a query parameter, a second
 * `Authorization` header, a cookie) fails the request with 401 however good the first one is, as
 * Envoy's jwt_authn; a token in a location no provider configures reaches the application untouched;
 * a verified token is removed from every location it was taken from unless forwardOriginalToken.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { InboundListener } from "../inbound/listener.ts";
import { Httpbin, mtlsFixture, RawConn, RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const ISS = "every-token@mesh.test";

async function signer(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: "RS256" }] });
  const sign = (sub: string) =>
    new SignJWT({ iss: ISS, sub, exp: Math.floor(Date.now() / 1000) + 3600 })
      .setProtectedHeader({ alg: "RS256", kid })
      .sign(privateKey);
  return { jwks, sign };
}

const issuer = await signer("k1");
// Same issuer and kid, another private key: the signature cannot verify.
const forger = await signer("k1");
const VALID = await issuer.sign("alice");
const OTHER_VALID = await issuer.sign("bob");
const FORGED = await forger.sign("mallory");

const policy = (extra: Record<string, unknown> = {}) => ({
  "foo/jwt": {
    name: "jwt",
    namespace: "foo",
    providers: [{ issuer: ISS, jwks: issuer.jwks, jwksUri: "", forwardOriginalToken: false, ...extra }],
  },
});

interface Case {
  name: string;
  provider?: Record<string, unknown>;
  /** The request bytes, `\r\n` line ends. */
  request: string;
  status: number;
  /** For a 200: what httpbin's /anything saw. */
  seen?: (body: { headers: Record<string, string>; args: Record<string, string | string[]> }) => void;
}

const head = (target: string, ...fields: string[]) =>
  [`GET ${target} HTTP/1.1`, "Host: httpbin.foo", ...fields, "", ""].join("\r\n");

const cases: Case[] = [
  {
    name: "Authorization valid + ?access_token forged: 401",
    request: head(`/anything?access_token=${FORGED}`, `Authorization: Bearer ${VALID}`),
    status: 401,
  },
  {
    name: "two Authorization headers, valid then forged: 401",
    request: head("/anything", `Authorization: Bearer ${VALID}`, `Authorization: Bearer ${FORGED}`),
    status: 401,
  },
  {
    name: "two Authorization headers, forged then valid: 401",
    request: head("/anything", `Authorization: Bearer ${FORGED}`, `Authorization: Bearer ${VALID}`),
    status: 401,
  },
  {
    name: "a second ?access_token, forged: 401",
    request: head(`/anything?access_token=${VALID}&access_token=${FORGED}`),
    status: 401,
  },
  {
    name: "a forged cookie token beside a valid header token: 401",
    provider: { fromHeaders: [{ name: "authorization", prefix: "Bearer " }], fromCookies: ["session"] },
    request: head("/anything", `Authorization: Bearer ${VALID}`, `Cookie: session=${FORGED}`),
    status: 401,
  },
  {
    name: "two valid Authorization headers and a valid ?access_token: 200, every token removed",
    request: head(
      `/anything?a=1&access_token=${VALID}&b=%2F`,
      `Authorization: Bearer ${VALID}`,
      `Authorization: Bearer ${OTHER_VALID}`,
    ),
    status: 200,
    seen: (b) => {
      assert.equal(b.headers.Authorization, undefined);
      assert.deepEqual(b.args, { a: "1", b: "/" });
    },
  },
  {
    name: "forwardOriginalToken: valid tokens stay where they were",
    provider: { forwardOriginalToken: true },
    request: head(`/anything?access_token=${VALID}`, `Authorization: Bearer ${VALID}`),
    status: 200,
    seen: (b) => {
      assert.equal(b.headers.Authorization, `Bearer ${VALID}`);
      assert.deepEqual(b.args, { access_token: VALID });
    },
  },
  {
    name: "tokens in unconfigured locations pass through untouched (only x-jwt is read)",
    provider: { fromHeaders: [{ name: "x-jwt", prefix: "" }] },
    request: head(`/anything?access_token=${FORGED}`, `X-Jwt: ${VALID}`, `Authorization: Bearer ${FORGED}`),
    status: 200,
    seen: (b) => {
      assert.equal(b.headers["X-Jwt"], undefined);
      assert.equal(b.headers.Authorization, `Bearer ${FORGED}`);
      assert.deepEqual(b.args, { access_token: FORGED });
    },
  },
];

Deno.test(requires(httpbinMissing(), {
  name: "inbound filters: every token is verified (raw request bytes, real httpbin)",
  async fn(t) {
    const { cert, files } = await mtlsFixture("spiffe://cluster.local/ns/foo/sa/httpbin", "spiffe://x/y");
    const httpbin = await Httpbin.start();
    let snapshot: RuntimeSnapshot = snapshotOf("PERMISSIVE", cert);
    const listener = new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: httpbin.port,
      mtlsPort: 8000,
      snapshot: () => snapshot,
      log: new RecordingLog(),
    });
    await listener.start();
    try {
      for (const c of cases) {
        await t.step(c.name, async () => {
          snapshot = { ...snapshotOf("PERMISSIVE", cert), jwtPolicies: policy(c.provider) };
          const conn = await RawConn.plain(listener.port);
          try {
            conn.write(c.request);
            const r = await conn.response();
            assert.equal(r.status, c.status, r.body);
            if (c.status === 401) {
              assert.equal(r.body, "Jwt verification fails");
              assert.match(
                r.headers["www-authenticate"],
                /^Bearer realm="http:\/\/httpbin\.foo\/anything", error="invalid_token"$/,
              );
            }
            c.seen?.(JSON.parse(r.body));
          } finally {
            conn.close();
          }
        });
      }
    } finally {
      await listener.close();
      await httpbin.stop();
      await files.remove();
    }
  },
}));
