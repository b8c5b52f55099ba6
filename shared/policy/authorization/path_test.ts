import assert from "node:assert/strict";
import { PATH_NORMALIZATIONS } from "../../proxy_settings/mod.ts";
import { compileAuthorization } from "./evaluate.ts";
import { normalizePath, PathError, pathTemplateRegExp } from "./path.ts";
import { PATH_VARIANTS } from "./path_variants.ts";

// Istio's normalization reference, "Path related" (BASE).
const cases: [string, string, string][] = [
  ["/a/../b", "/b", ""],
  ["/public/./data/abc/../xyz", "/public/data/xyz", ""],
  ["/some\\data", "/some/data", ""],
  ["/%61%62%63", "/abc", ""],
  ["/a/%2e%2e/b", "/b", ""],
  ["/a/%2E%2E/b", "/b", ""],
  ["/some%2fdata", "/some%2fdata", ""],
  ["/x%5cy", "/x%5cy", ""],
  ["/%7e%5f%2d%30", "/~_-0", ""],
  ["/a//b", "/a//b", ""],
  ["/foo?v=1", "/foo", "?v=1"],
  ["/a/../b?x=/../", "/b", "?x=/../"],
  ["/..", "/", ""],
  ["/a/b/..", "/a/", ""],
  ["/a/.", "/a/", ""],
  ["http://example.com/a/../b?q", "/b", "?q"],
  ["*", "*", ""],
  ["/%20x", "/%20x", ""],
];
for (const [target, path, query] of cases) {
  Deno.test(`normalizePath BASE ${target}`, () => {
    const n = normalizePath(target, "BASE");
    assert.equal(n.path, path);
    assert.equal(n.query, query);
    assert.equal(n.changed, path + query !== target);
  });
}

Deno.test("normalizePath refuses %00 and # under every option", () => {
  for (const option of PATH_NORMALIZATIONS) {
    assert.throws(() => normalizePath("/a%00b", option), PathError);
    assert.throws(() => normalizePath("/a#b", option), /fragment/);
    assert.throws(() => normalizePath("/a?b#c", option), /fragment/);
  }
});

Deno.test("normalizePath: an absolute-form target gives its authority and scheme", () => {
  const n = normalizePath("HTTP://Example.com:8080/a/../b?q", "BASE");
  assert.deepEqual(n, {
    path: "/b",
    query: "?q",
    authority: "Example.com:8080",
    scheme: "http",
    changed: true,
  });
  assert.equal(normalizePath("http://h?q", "NONE").path, "/");
  assert.equal(normalizePath("/a", "NONE").authority, undefined);
  assert.throws(() => normalizePath("http:///a"), /no authority/);
  assert.throws(() => normalizePath("http://u:p@h/a"), /userinfo/);
});

Deno.test("the path variants table has 62 distinct targets", () => {
  assert.equal(PATH_VARIANTS.length, 62);
  assert.equal(new Set(PATH_VARIANTS.map((v) => v.target)).size, 62);
});

// A DENY on /headers, as the probes used: it must match exactly when the normalized path is
// /headers, and the path the policy sees is the path forwarded (path + query, nothing else).
const denyHeaders = compileAuthorization([{
  namespace: "foo",
  name: "deny-headers",
  action: "DENY",
  rules: [{ to: [{ operation: { paths: ["/headers"] } }] }],
}]);
for (const option of PATH_NORMALIZATIONS) {
  Deno.test(`path variants under ${option}: the policy sees what is forwarded`, () => {
    const failures: string[] = [];
    for (const { target, expected } of PATH_VARIANTS) {
      const want = expected[option];
      let got: string | null;
      let forwarded = "";
      let denied = false;
      try {
        const n = normalizePath(target, option);
        got = n.path;
        forwarded = n.path + n.query;
        denied = !denyHeaders.evaluate({ method: "GET", path: n.path, pathNormalized: true, port: 80 })
          .allowed;
        const q = target.indexOf("?");
        if (q >= 0 && n.query !== target.slice(q)) failures.push(`${target}: query ${n.query}`);
        if (n.changed !== (forwarded !== target)) failures.push(`${target}: changed ${n.changed}`);
      } catch (e) {
        if (!(e instanceof PathError)) throw e;
        got = null;
      }
      if (got !== want) failures.push(`${target}: ${got} (want ${want})`);
      if (got !== null && denied !== (got === "/headers")) failures.push(`${target}: denied ${denied}`);
    }
    assert.deepEqual(failures, []);
  });
}

const templates: [string, string, boolean][] = [
  ["/foo/{*}", "/foo/bar", true],
  ["/foo/{*}", "/foo/bar/baz", false],
  ["/foo/{*}", "/foo/", false],
  ["/foo/{**}", "/foo/bar/baz", true],
  ["/foo/{**}", "/foo/", true],
  ["/foo/{**}", "/foo", false],
  ["/foo/{*}/bar", "/foo/x/bar", true],
  ["/foo/{*}/bar", "/foo/x/y/bar", false],
  ["/foo/{**}/bar", "/foo/x/y/bar", true],
];
for (const [t, path, want] of templates) {
  Deno.test(`pathTemplateRegExp ${t} on ${path}`, () => assert.equal(pathTemplateRegExp(t).test(path), want));
}
