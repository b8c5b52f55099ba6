/**
 * Bugs planted in JWT authentication (shared/policy/jwt): issuer, audience, expiry, not-before and
 * skew checks, key handling, the principal and claims, and where tokens are read from.
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

// The checks file first: one key pair instead of nine, so most mutants are caught in a fraction of the time.
const TESTS = ["shared/policy/jwt/authenticate_checks_test.ts", "shared/policy/jwt/authenticate_test.ts"];
const a = mutant("jwt", "shared/policy/jwt/authenticate.ts", TESTS);
const l = mutant("jwt", "shared/policy/jwt/token_location.ts", TESTS);

/** The JWT mutants. */
export const JWT_MUTANTS: readonly Mutant[] = [
  a("issuer not checked", "if (c.p.issuer !== iss) continue;", "", {
    find: "issuer: c.p.issuer,",
    replace: "",
  }),
  a("issuer checked by jose only", "if (c.p.issuer !== iss) continue;", ""),
  a(
    "audience not checked",
    "audience: c.p.audiences?.length ? [...c.p.audiences] : undefined,",
    "audience: undefined,",
  ),
  a(
    "a token without aud passes listed audiences",
    "audience: c.p.audiences?.length ? [...c.p.audiences] : undefined,",
    "audience: c.p.audiences?.length && decodeJwt(token).aud !== undefined ? [...c.p.audiences] : undefined,",
  ),
  a("no clock skew", "export const JWT_CLOCK_SKEW_SECONDS = 60;", "export const JWT_CLOCK_SKEW_SECONDS = 0;"),
  a(
    "twice the clock skew",
    "export const JWT_CLOCK_SKEW_SECONDS = 60;",
    "export const JWT_CLOCK_SKEW_SECONDS = 120;",
  ),
  a(
    "the request's time is ignored (exp and nbf read another clock)",
    "currentDate: now === undefined ? undefined : new Date(now * 1000),",
    "currentDate: undefined,",
  ),
  a(
    "expired tokens accepted",
    "      } catch (e) {\n        reason = reasonOf(e);",
    "      } catch (e) {\n        if (e instanceof errors.JWTExpired) return this.#accepted(token, e.payload, c, location);\n" +
      "        reason = reasonOf(e);",
  ),
  a(
    "nbf not checked",
    "      } catch (e) {\n        reason = reasonOf(e);",
    '      } catch (e) {\n        if (e instanceof errors.JWTClaimValidationFailed && e.claim === "nbf") {\n' +
      "          return this.#accepted(token, e.payload, c, location);\n        }\n        reason = reasonOf(e);",
  ),
  a("algorithms not restricted", "algorithms: JWT_ALGORITHMS as string[],", ""),
  a(
    "symmetric keys kept",
    '["RSA", "EC", "OKP"].includes(String(k.kty))',
    '["RSA", "EC", "OKP", "oct"].includes(String(k.kty))',
  ),
  a(
    "private key members kept",
    ".filter(([name]) => !PRIVATE_MEMBERS.includes(name))",
    '.filter(([name]) => name !== "oth")',
  ),
  a("a provider without keys is skipped silently", "reason = `Jwt verification fails: ${c.noKeys}`;", ""),
  a(
    "principal is the subject only",
    'principal: `${payload.iss}/${payload.sub ?? ""}`,',
    "principal: `${payload.sub}`,",
  ),
  a(
    "principal is sub/iss",
    'principal: `${payload.iss}/${payload.sub ?? ""}`,',
    "principal: `${payload.sub}/${payload.iss}`,",
  ),
  a(
    "space-delimited claims not split",
    'if (typeof v === "string") claims[name] = v.split(/\\s+/).filter((s) => s !== "");',
    "",
  ),
  a(
    "spaceDelimitedClaims of the provider ignored",
    "new Set([...DEFAULT_SPACE_DELIMITED, ...(p.spaceDelimitedClaims ?? [])])",
    "new Set(DEFAULT_SPACE_DELIMITED)",
  ),
  a(
    "header token always removed",
    'location.kind === "header" && !c.p.forwardOriginalToken ? location.name',
    'location.kind === "header" ? location.name',
  ),
  a(
    "a parameter token is removed as a header",
    'removeHeader: location.kind === "header" && !c.p.forwardOriginalToken',
    "removeHeader: !c.p.forwardOriginalToken",
  ),
  a(
    "claims with CR or LF reach headers",
    "return text !== undefined && !/[\\r\\n\\0]/.test(text) ? text : undefined;",
    "return text;",
  ),
  a(
    "output headers not stripped from requests",
    "for (const p of providers) {\n      if (p.outputPayloadToHeader)",
    "for (const p of []) {\n      if (p.outputPayloadToHeader)",
  ),
  l("bearer scheme case-sensitive", 'head.toLowerCase() === "bearer "', 'head === "Bearer "'),
  l("prefix not checked", "const same = prefix === BEARER ?", "const same = true || prefix === BEARER ?"),
  l("prefix kept in the token", "return t.slice(prefix.length).trim();", "return t;"),
  l(
    "parameter name ignored",
    "return new URLSearchParams(path.slice(q + 1)).get(name) || undefined;",
    'return new URLSearchParams(path.slice(q + 1)).get("access_token") || undefined;',
  ),
  l(
    "cookie name matched as a substring",
    "part.slice(0, eq).trim() === name",
    "part.slice(0, eq).trim().endsWith(name)",
  ),
  l(
    "parameters tried before headers",
    "const rank = { header: 0, param: 1, cookie: 2 };",
    "const rank = { header: 1, param: 0, cookie: 2 };",
  ),
  l(
    "explicit locations add to the defaults",
    "return all.length > 0 ? all : [DEFAULT_HEADER, DEFAULT_PARAM];",
    "return [...all, DEFAULT_HEADER, DEFAULT_PARAM];",
  ),
  l("header names case-sensitive", "name: h.name.toLowerCase(),", "name: h.name,"),
];
