import assert from "node:assert/strict";
import { parse } from "yaml";
import { canonicalJson, lineDiff, structured, table } from "./output.ts";

Deno.test("table: columns padded to the widest cell plus three spaces; no trailing blanks", () => {
  assert.equal(
    table(["NAME", "PORT"], [["httpbin-1.foo", "8080"], ["a", ""]]),
    "NAME            PORT\nhttpbin-1.foo   8080\na\n",
  );
});

Deno.test("structured: json and yaml of the same value", () => {
  const v = { a: [1, { b: "c" }] };
  assert.deepEqual(JSON.parse(structured(v, "json")), v);
  assert.deepEqual(parse(structured(v, "yaml")), v);
});

Deno.test("canonicalJson sorts keys at every depth", () => {
  assert.equal(canonicalJson({ b: 1, a: { d: 2, c: 3 } }), canonicalJson({ a: { c: 3, d: 2 }, b: 1 }));
});

Deno.test("lineDiff: empty when equal; - for lines only in a, + for lines only in b", () => {
  assert.deepEqual(lineDiff("x\ny", "x\ny"), []);
  assert.deepEqual(lineDiff("a\nb\nc", "a\nB\nc"), ["  a", "- b", "+ B", "  c"]);
  assert.deepEqual(lineDiff("a", "a\nb"), ["  a", "+ b"]);
});
