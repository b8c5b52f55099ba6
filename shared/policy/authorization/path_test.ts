import assert from "node:assert/strict";
import { normalizePath, PathError, pathTemplateRegExp } from "./path.ts";

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
  Deno.test(`normalizePath ${target}`, () => {
    const n = normalizePath(target);
    assert.equal(n.path, path);
    assert.equal(n.query, query);
    assert.equal(n.changed, path + query !== target);
  });
}

Deno.test("normalizePath refuses %00", () => {
  assert.throws(() => normalizePath("/a%00b"), PathError);
});

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
