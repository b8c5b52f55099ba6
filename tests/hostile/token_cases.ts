/**
 * Token tricks against a RequestAuthentication (inline JWKS, one RSA key `k1`) and an ALLOW policy
 * that admits `/anything/jwt` only with the right requestPrincipal. A case passes when httpbin's
 * answer for /anything/jwt never comes back, except for the controls, which must get 200.
 *
 * "Envoy" is its jwt_authn filter: every token extracted for a provider is verified, 60 s of clock
 * skew on `exp` (`now > exp + 60` fails) and `nbf` (`nbf > now + 60` fails), no `none`, the key only
 * from the configured JWKS (never from `jku`, `x5u` or `jwk` in the token's header).
 *
 * @module
 */
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { Buffer } from "node:buffer";
import type { CaseContext, HostileCase } from "./corpus.ts";

/** The issuer and subject the ALLOW policy requires (`<iss>/<sub>`). */
export const ISSUER = "hostile@mesh.test";
export const SUBJECT = "alice";
/** The protected path. */
export const JWT_PATH = "/anything/jwt";
/** httpbin's answer for the protected path. */
export const JWT_REACHED = /"url"\s*:\s*"[^"]*\/anything\/jwt/;

/** The key the mesh trusts, as the JWKS text for the RequestAuthentication, and the token signer. */
export interface TokenKeys {
  jwks: string;
  /** Mints every token of the cases, with times relative to now (call right before sending). */
  mint(): Promise<Record<string, string>>;
}

const b64url = (s: string | Uint8Array) => Buffer.from(s).toString("base64url");

/** Makes the trusted key `k1` and an attacker's key. */
export async function makeTokenKeys(): Promise<TokenKeys> {
  const good = await generateKeyPair("RS256", { extractable: true });
  const evil = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(good.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const publicPem = await exportSPKI(good.publicKey);
  const evilJwk = await exportJWK(evil.publicKey);
  const sign = (
    claims: Record<string, unknown>,
    header: Record<string, unknown>,
    key: CryptoKey | Uint8Array,
  ) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ sub: SUBJECT, ...claims })
      .setProtectedHeader({ alg: "RS256", kid: "k1", ...header } as { alg: string })
      .setIssuer(ISSUER)
      .setIssuedAt(now - 120)
      .setExpirationTime((claims.exp as number | undefined) ?? now + 3600)
      .sign(key);
  };
  return {
    jwks: JSON.stringify({ keys: [jwk] }),
    async mint() {
      const now = Math.floor(Date.now() / 1000);
      const valid = await sign({}, {}, good.privateKey);
      const payload = b64url(JSON.stringify({ iss: ISSUER, sub: SUBJECT, exp: now + 3600 }));
      return {
        valid,
        none: `${b64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${payload}.`,
        noneKid: `${b64url(JSON.stringify({ alg: "none", kid: "k1" }))}.${payload}.`,
        hsWithPublicKey: await sign({}, { alg: "HS256" }, new TextEncoder().encode(publicPem)),
        kidSwap: await sign({}, {}, evil.privateKey),
        unknownKid: await sign({}, { kid: "evil" }, evil.privateKey),
        jku: await sign({}, { kid: "evil", jku: "http://evil.example/jwks.json" }, evil.privateKey),
        x5u: await sign({}, { kid: "evil", x5u: "http://evil.example/cert.pem" }, evil.privateKey),
        embeddedJwk: await sign({}, { kid: "evil", jwk: evilJwk }, evil.privateKey),
        badSignature: valid.slice(0, -6) + (valid.endsWith("AAAAAA") ? "BBBBBB" : "AAAAAA"),
        wrongIssuer: await new SignJWT({ sub: SUBJECT }).setProtectedHeader({ alg: "RS256", kid: "k1" })
          .setIssuer("evil@mesh.test").setExpirationTime(now + 3600).sign(good.privateKey),
        expiredBeyondSkew: await sign({ exp: now - 61 }, {}, good.privateKey),
        expiredWithinSkew: await sign({ exp: now - 58 }, {}, good.privateKey),
        notYetBeyondSkew: await sign({ nbf: now + 62 }, {}, good.privateKey),
        notYetWithinSkew: await sign({ nbf: now + 58 }, {}, good.privateKey),
      };
    },
  };
}

function request(c: CaseContext, auth: string[], query = ""): string {
  const fields = auth.map((a) => `Authorization: ${a}\r\n`).join("");
  return `GET ${JWT_PATH}${query} HTTP/1.1\r\nHost: ${c.host}\r\n${fields}Connection: close\r\n\r\n`;
}

const tokenCase = (
  id: string,
  what: string,
  envoy: string,
  bytes: (c: CaseContext) => string,
  want?: number[],
  never: RegExp | undefined = want ? undefined : JWT_REACHED,
): HostileCase => ({ id, group: "token", what, envoy, bytes, want, never });

const bearer = (name: string) => (c: CaseContext) => request(c, [`Bearer ${c.tokens[name]}`]);
const REJECTED = "401 Jwt verification fails";

/** The token cases. */
export const TOKEN_CASES: HostileCase[] = [
  tokenCase("jwt-valid", "a valid RS256 token (control: 200)", "200", bearer("valid"), [200]),
  tokenCase("jwt-missing", "no token (control: 403)", "403 RBAC: access denied", (c) => request(c, []), [
    403,
  ]),
  tokenCase("jwt-none", "alg none, empty signature", REJECTED, bearer("none")),
  tokenCase("jwt-none-kid", "alg none with the trusted kid", REJECTED, bearer("noneKid")),
  tokenCase(
    "jwt-hs-rs",
    "HS256 signed with the RSA public key (HS/RS confusion)",
    REJECTED,
    bearer("hsWithPublicKey"),
  ),
  tokenCase("jwt-kid-swap", "attacker's key, trusted kid k1", REJECTED, bearer("kidSwap")),
  tokenCase("jwt-kid-unknown", "attacker's key, unknown kid", REJECTED, bearer("unknownKid")),
  tokenCase("jwt-jku", "jku header pointing at the attacker's JWKS", REJECTED, bearer("jku")),
  tokenCase("jwt-x5u", "x5u header pointing elsewhere", REJECTED, bearer("x5u")),
  tokenCase("jwt-embedded-jwk", "the attacker's key embedded as jwk", REJECTED, bearer("embeddedJwk")),
  tokenCase(
    "jwt-bad-signature",
    "a valid token with its signature altered",
    REJECTED,
    bearer("badSignature"),
  ),
  tokenCase(
    "jwt-wrong-issuer",
    "signed by the trusted key, another issuer",
    "401 Jwt issuer is not configured",
    bearer("wrongIssuer"),
  ),
  tokenCase(
    "jwt-exp-61",
    "exp = now - 61 s (beyond the 60 s skew)",
    "401 Jwt is expired",
    bearer("expiredBeyondSkew"),
  ),
  tokenCase("jwt-exp-58", "exp = now - 58 s (within the skew: 200)", "200", bearer("expiredWithinSkew"), [
    200,
  ]),
  tokenCase(
    "jwt-nbf-62",
    "nbf = now + 62 s (beyond the skew)",
    "401 Jwt not yet valid",
    bearer("notYetBeyondSkew"),
  ),
  tokenCase("jwt-nbf-58", "nbf = now + 58 s (within the skew: 200)", "200", bearer("notYetWithinSkew"), [
    200,
  ]),
  tokenCase(
    "jwt-param-second",
    "valid Authorization plus a forged ?access_token=",
    "401: both tokens are verified, one fails",
    (c) => request(c, [`Bearer ${c.tokens.valid}`], `?access_token=${c.tokens.kidSwap}`),
  ),
  tokenCase(
    "jwt-param-only-forged",
    "no header, a forged ?access_token=",
    REJECTED,
    (c) => request(c, [], `?access_token=${c.tokens.kidSwap}`),
  ),
  tokenCase(
    "jwt-two-headers-valid-first",
    "two Authorization headers: valid, then forged",
    "401 (both verified) or 400",
    (c) => request(c, [`Bearer ${c.tokens.valid}`, `Bearer ${c.tokens.kidSwap}`]),
  ),
  tokenCase(
    "jwt-two-headers-forged-first",
    "two Authorization headers: forged, then valid",
    "401 (both verified) or 400",
    (c) => request(c, [`Bearer ${c.tokens.kidSwap}`, `Bearer ${c.tokens.valid}`]),
  ),
  tokenCase(
    "jwt-list-header",
    "one Authorization header holding 'Bearer <valid>, Bearer <forged>'",
    REJECTED,
    (c) => request(c, [`Bearer ${c.tokens.valid}, Bearer ${c.tokens.kidSwap}`]),
  ),
  tokenCase(
    "jwt-pipelined-no-token",
    "a valid token's request, then on the same connection one without a token",
    "200, then 403: each request is authenticated on its own",
    (c) =>
      `GET ${JWT_PATH} HTTP/1.1\r\nHost: ${c.host}\r\nAuthorization: Bearer ${c.tokens.valid}\r\n\r\n` +
      request(c, [], "?second=1"),
    [200],
    /"url"\s*:\s*"[^"]*\/anything\/jwt\?second=1/,
  ),
];
