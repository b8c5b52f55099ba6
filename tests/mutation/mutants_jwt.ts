/**
 * Bugs planted in JWT authentication (shared/policy/jwt): issuer, audience, expiry, not-before and
 * skew checks, key handling, the principal and claims, where tokens are read from, every token
 * verified, and what is removed from the forwarded request.
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

// Cheapest first (authenticate_test.ts generates nine key pairs): the first file that fails decides.
const TESTS = [
  "shared/policy/jwt/time_constraint_test.ts",
  "shared/policy/jwt/authenticate_checks_test.ts",
  "shared/policy/jwt/token_location_test.ts",
  "shared/policy/jwt/authenticate_every_token_test.ts",
  "shared/policy/jwt/authenticate_test.ts",
];
const a = mutant("jwt", "shared/policy/jwt/authenticate.ts", TESTS);
const l = mutant("jwt", "shared/policy/jwt/token_location.ts", TESTS);
const t = mutant("jwt", "shared/policy/jwt/time_constraint.ts", TESTS);

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
    "verifyTimeConstraint(claims, now ?? Date.now() / 1000, JWT_CLOCK_SKEW_SECONDS)",
    "verifyTimeConstraint(claims, Date.now() / 1000, JWT_CLOCK_SKEW_SECONDS)",
  ),
  a("time not checked", "if (late !== undefined) return { ok: false, reason: late };", ""),
  a(
    "jose's own time checks on (one second stricter than Envoy at exp)",
    "clockTolerance: JOSE_TIME_CHECKS_OFF,",
    "clockTolerance: JWT_CLOCK_SKEW_SECONDS,\n          currentDate: now === undefined ? undefined : new Date(now * 1000),",
  ),
  t("expired tokens accepted", 'if (exp !== undefined && t > exp + skew) return "Jwt is expired";', ""),
  t("nbf not checked", 'if (nbf !== undefined && t + skew < nbf) return "Jwt not yet valid";', ""),
  t(
    "exp edge as jose's (now - skew expired)",
    "t > exp + skew",
    "t >= exp + skew",
  ),
  t(
    "nbf edge one second stricter (now + skew not yet valid)",
    "t + skew < nbf",
    "t + skew <= nbf",
  ),
  t("exp fractions rounded up", "return Math.trunc(v);", "return Math.ceil(v);"),
  t("negative time claims accepted", "if (!(v >= 0 && v < UINT64_LIMIT))", "if (!(v < UINT64_LIMIT))"),
  t(
    "non-number time claims ignored",
    'if (typeof v !== "number") return `Jwt payload [${name}] field is not an integer`;',
    'if (typeof v !== "number") return undefined;',
  ),
  t("the clock's fraction of a second kept", "const t = Math.floor(now);", "const t = now;"),
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
    'principal: `${first.payload.iss}/${first.payload.sub ?? ""}`,',
    "principal: `${first.payload.sub}`,",
  ),
  a(
    "principal is sub/iss",
    'principal: `${first.payload.iss}/${first.payload.sub ?? ""}`,',
    "principal: `${first.payload.sub}/${first.payload.iss}`,",
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
  a("forwardOriginalToken ignored", "if (c.p.forwardOriginalToken) continue;", ""),
  a(
    "a parameter token is left in place",
    'else if (found.location.kind === "param") removeParams.add(found.location.name);',
    "",
  ),
  a(
    "a cookie token is removed as a header",
    'if (found.location.kind === "header") removeHeaders.add(found.location.name);',
    'if (found.location.kind !== "param") removeHeaders.add(found.location.name);',
  ),
  a("only the first token is verified", "for (const f of found) {", "for (const f of found.slice(0, 1)) {"),
  a(
    "an invalid token among valid ones is skipped",
    'if (!r.ok) return { status: "invalid", reason: r.reason, location: f.location };',
    "if (!r.ok) continue;",
  ),
  a(
    "a token verified once counts for every location's providers",
    'const key = `${f.providers.join(",")} ${f.token}`;',
    "const key = f.token;",
  ),
  a(
    "a later token's header edits replace the first's",
    "if (!setHeaders.some(([n]) => n === name)) setHeaders.push([name, value]);",
    "setHeaders.push([name, value]);",
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
  l(
    "bearer scheme case-sensitive",
    'prefix === BEARER ? v.toLowerCase().indexOf("bearer ") : v.indexOf(prefix)',
    "v.indexOf(prefix)",
  ),
  l("prefix not checked", "if (at < 0) return undefined;", "if (at < 0) return v || undefined;"),
  l(
    "prefix kept in the token",
    "return v.slice(at + prefix.length).trim() || undefined;",
    "return v || undefined;",
  ),
  l(
    "parameter name ignored",
    "new URLSearchParams(q).getAll(l.name)",
    'new URLSearchParams(q).getAll("access_token")',
  ),
  l(
    "only the first parameter value read",
    "new URLSearchParams(q).getAll(l.name)",
    "new URLSearchParams(q).getAll(l.name).slice(0, 1)",
  ),
  l(
    "only the first value of a repeated header read",
    'return typeof v === "string" ? v.split(",") : v;',
    'return typeof v === "string" ? v.split(",").slice(0, 1) : v.slice(0, 1);',
  ),
  l(
    "only the first cookie of the name read",
    "if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());",
    "if (eq > 0 && part.slice(0, eq).trim() === name && out.length === 0) out.push(part.slice(eq + 1).trim());",
  ),
  l(
    "the fragment read as query",
    "return path.slice(q + 1, h < 0 ? undefined : h);",
    "return path.slice(q + 1);",
  ),
  l(
    "withoutParams removes nothing",
    "return name === undefined || !names.includes(name);",
    "return true;",
  ),
  l(
    "cookie name matched as a substring",
    "part.slice(0, eq).trim() === name)",
    "part.slice(0, eq).trim().endsWith(name))",
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
