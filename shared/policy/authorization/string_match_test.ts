import assert from "node:assert/strict";
import { wildcardMatcher, type WildcardOptions } from "./string_match.ts";

const cases: [string, string, WildcardOptions, boolean][] = [
  ["*", "x", {}, true],
  ["*", "", {}, false],
  ["*", "", { star: "any" }, true],
  ["*.example.com", "api.example.com", {}, true],
  ["*.example.com", "example.com", {}, false],
  ["/admin*", "/admin/x", {}, true],
  ["/admin*", "/public", {}, false],
  ["GET", "GET", {}, true],
  ["GET", "get", {}, false],
  ["Example.COM", "example.com", { ignoreCase: true }, true],
  ["*.Example.com", "API.EXAMPLE.COM", { ignoreCase: true }, true],
  ["api.*", "API.x", { ignoreCase: true }, true],
];
for (const [pattern, text, options, want] of cases) {
  Deno.test(`wildcardMatcher ${JSON.stringify(pattern)} ${JSON.stringify(options)} on ${JSON.stringify(text)}`, () => {
    assert.equal(wildcardMatcher(pattern, options)(text), want);
  });
}
