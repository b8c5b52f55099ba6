import assert from "node:assert/strict";
import { escapeRegExp, wildcardMatcher, type WildcardOptions } from "./string_match.ts";

const cases: [string, string, WildcardOptions, boolean][] = [
  ["*", "x", {}, true],
  ["*", "", {}, false],
  ["*", "", { star: "any" }, true],
  ["*.example.com", "api.example.com", {}, true],
  ["*.example.com", "example.com", {}, false],
  ["*.example.com", "api.example.com.evil.net", {}, false],
  ["/admin*", "/admin/x", {}, true],
  ["/admin*", "/public", {}, false],
  ["/admin*", "/public/admin", {}, false],
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

Deno.test("escapeRegExp makes every regular expression character literal", () => {
  const literal = "a.b*c+d?e^f$g{h}i(j)k|l[m]n\\o/p";
  const re = new RegExp(`^${escapeRegExp(literal)}$`);
  assert.ok(re.test(literal));
  for (const other of ["axb*c+d?e^f$g{h}i(j)k|l[m]n\\o/p", "a.bbc+d?e^f$g{h}i(j)k|l[m]n\\o/p"]) {
    assert.equal(re.test(other), false, other);
  }
});
