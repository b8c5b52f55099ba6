import assert from "node:assert/strict";
import { verifyTimeConstraint } from "./time_constraint.ts";

const NOW = 1_800_000_000;
const SKEW = 60;
const OK = undefined;
const EXPIRED = "Jwt is expired";
const NOT_YET = "Jwt not yet valid";

/**
 * [name, claims, Envoy's verdict] at a fixed clock of NOW with 60 s of skew. Envoy's verdicts are
 * those of jwt_verify_lib's `verifyTimeConstraint`: expired when `now > exp + skew`, not yet valid
 * when `now + skew < nbf`.
 */
const CASES: [string, Record<string, unknown>, string | undefined][] = [
  // The exp edge: Envoy accepts exactly now - skew (jose alone refuses it).
  ["exp = now - 61: Envoy refuses (now > exp + 60)", { exp: NOW - 61 }, EXPIRED],
  ["exp = now - 60: Envoy accepts (now = exp + 60)", { exp: NOW - 60 }, OK],
  ["exp = now - 59: Envoy accepts", { exp: NOW - 59 }, OK],
  // The nbf edge: Envoy accepts exactly now + skew.
  ["nbf = now + 59: Envoy accepts", { nbf: NOW + 59 }, OK],
  ["nbf = now + 60: Envoy accepts (now + 60 = nbf)", { nbf: NOW + 60 }, OK],
  ["nbf = now + 61: Envoy refuses (now + 60 < nbf)", { nbf: NOW + 61 }, NOT_YET],
  // Both claims, and neither.
  ["no nbf, no exp", {}, OK],
  ["nbf an hour ago, exp in an hour", { nbf: NOW - 3600, exp: NOW + 3600 }, OK],
  ["nbf ahead and exp past: not yet valid is checked first", { nbf: NOW + 61, exp: NOW - 61 }, NOT_YET],
  // Envoy reads the claims as uint64: fractions truncated, negatives and non-numbers refused.
  ["exp = now - 60.9 truncates to now - 61: refused", { exp: NOW - 60.9 }, EXPIRED],
  ["exp = now - 59.5 truncates to now - 60: accepted", { exp: NOW - 59.5 }, OK],
  ["nbf = now + 60.9 truncates to now + 60: accepted", { nbf: NOW + 60.9 }, OK],
  ["exp a string", { exp: String(NOW + 3600) }, "Jwt payload [exp] field is not an integer"],
  ["nbf null", { nbf: null }, "Jwt payload [nbf] field is not an integer"],
  ["exp negative", { exp: -1 }, "Jwt payload [exp] field is not a positive 64 bit integer"],
  ["nbf of 2^64", { nbf: 2 ** 64 }, "Jwt payload [nbf] field is not a positive 64 bit integer"],
  // Deliberately stricter than Envoy, which reads exp 0 as "no exp".
  ["exp 0 is expired", { exp: 0 }, EXPIRED],
];

for (const [name, claims, want] of CASES) {
  Deno.test(`verifyTimeConstraint: ${name}`, () => {
    assert.equal(verifyTimeConstraint(claims, NOW, SKEW), want);
  });
}

Deno.test("verifyTimeConstraint: the clock's fraction of a second is dropped, as Envoy's nowToSeconds", () => {
  assert.equal(verifyTimeConstraint({ exp: NOW - 60 }, NOW + 0.999, SKEW), OK);
  assert.equal(verifyTimeConstraint({ nbf: NOW + 61 }, NOW + 0.999, SKEW), NOT_YET);
});

Deno.test("verifyTimeConstraint: the skew is the one given", () => {
  assert.equal(verifyTimeConstraint({ exp: NOW - 1 }, NOW, 0), EXPIRED);
  assert.equal(verifyTimeConstraint({ nbf: NOW + 1 }, NOW, 0), NOT_YET);
  assert.equal(verifyTimeConstraint({ exp: NOW - 120 }, NOW, 120), OK);
});
