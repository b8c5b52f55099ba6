import assert from "node:assert/strict";
import {
  flagName,
  objectAt,
  oneOf,
  optionalListAt,
  optionalStringAt,
  optionalStringsAt,
  stringFlag,
  stringMapAt,
  stringsFlag,
} from "./json_fields.ts";

Deno.test("json_fields: each reader returns the typed value, or names the source and field", () => {
  assert.deepEqual(objectAt({ a: 1 }, "f: x"), { a: 1 });
  for (const bad of [null, [], "s", 1]) {
    assert.throws(() => objectAt(bad, "f: x"), /^Error: f: x: not an object$/);
  }
  assert.equal(optionalListAt(null, "f: l"), undefined);
  assert.throws(() => optionalListAt({}, "f: l"), /^Error: f: l: not a list$/);
  assert.deepEqual(optionalStringsAt(["a"], "f: l"), ["a"]);
  assert.throws(() => optionalStringsAt(["a", 2], "f: l"), /^Error: f: l\[1\]: not a string$/);
  assert.equal(optionalStringAt(undefined, "f: s"), undefined);
  assert.throws(() => optionalStringAt(3, "f: s"), /^Error: f: s: not a string$/);
  assert.deepEqual(stringMapAt(undefined, "f: m"), {});
  assert.deepEqual(stringMapAt({ app: "web" }, "f: m"), { app: "web" });
  assert.throws(() => stringMapAt({ app: 1 }, "f: m"), /^Error: f: m\["app"\]: not a string$/);
  assert.equal(oneOf(["a", "b"], "b", "f: o"), "b");
  assert.throws(() => oneOf(["a", "b"], "c", "f: o"), /^Error: f: o: "c" is not one of a, b$/);
});

Deno.test("json_fields: commander options are read by key and named by flag", () => {
  assert.equal(flagName("sourceServiceAccount"), "--source-service-account");
  assert.equal(stringFlag({ trustDomain: "td" }, "trustDomain"), "td");
  assert.throws(() => stringFlag({}, "trustDomain"), /^Error: --trust-domain: missing$/);
  assert.deepEqual(stringsFlag({}, "header"), []);
  assert.throws(() => stringsFlag({ header: "x" }, "header"), /^Error: --header: not a list$/);
});
