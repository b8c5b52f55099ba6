/**
 * A token's `nbf` and `exp` against the clock, with Envoy's exact inequalities: jwt_verify_lib's
 * `Jwt::verifyTimeConstraint` (source/common/jwt/jwt.cc), called by jwt_authn's authenticator with
 * `DateUtil::nowToSeconds` and the provider's `clock_skew_seconds` (default 60):
 *
 * - not yet valid when `now + skew < nbf` (a token whose `nbf` is exactly `now + skew` passes);
 * - expired when `now > exp + skew` (a token whose `exp` is exactly `now - skew` passes).
 *
 * npm:jose's own check refuses `exp <= now - tolerance`, one second stricter than Envoy at the edge,
 * so authenticate.ts turns jose's time checks off and uses this one.
 *
 * The claims are read as Envoy's `StructUtils::GetUInt64` reads them: a JSON number, truncated to
 * whole seconds; a negative value (or one of 2^64 or more) is refused with Envoy's parse error.
 * One deliberate difference: Envoy stores an absent `exp` as 0 and so never expires a token that
 * says `exp: 0` (or any `exp` below 1); here such a token is expired, as its claim says.
 *
 * @module
 */

/** Largest value Envoy's uint64 parse accepts is below this. */
const UINT64_LIMIT = 2 ** 64;

/**
 * Envoy's verdict on a token's time claims.
 *
 * @param payload the token's (decoded, not yet verified) claims
 * @param now the time, whole seconds since the epoch (fractions are dropped, as Envoy's clock does)
 * @param skew the clock skew, seconds
 * @returns undefined when the token is within its time, else Envoy's 401 reason: `Jwt not yet
 * valid`, `Jwt is expired`, or `Jwt payload [nbf|exp] field is not an integer` / `... is not a
 * positive 64 bit integer`
 */
export function verifyTimeConstraint(
  payload: Readonly<Record<string, unknown>>,
  now: number,
  skew: number,
): string | undefined {
  const t = Math.floor(now);
  const nbf = secondsClaim(payload, "nbf");
  if (typeof nbf === "string") return nbf;
  const exp = secondsClaim(payload, "exp");
  if (typeof exp === "string") return exp;
  if (nbf !== undefined && t + skew < nbf) return "Jwt not yet valid";
  if (exp !== undefined && t > exp + skew) return "Jwt is expired";
  return undefined;
}

/** A time claim as whole seconds, undefined when absent, or Envoy's parse error text. */
function secondsClaim(
  payload: Readonly<Record<string, unknown>>,
  name: "nbf" | "exp",
): number | string | undefined {
  if (!Object.hasOwn(payload, name)) return undefined;
  const v = payload[name];
  if (typeof v !== "number") return `Jwt payload [${name}] field is not an integer`;
  if (!(v >= 0 && v < UINT64_LIMIT)) return `Jwt payload [${name}] field is not a positive 64 bit integer`;
  return Math.trunc(v);
}
