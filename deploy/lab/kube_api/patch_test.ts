import assert from "node:assert/strict";
import { jsonPatch, mergePatch, strategicMerge } from "./patch.ts";
import { ApiError } from "./types.ts";

Deno.test("merge patch (RFC 7386): null deletes, objects merge, lists replace", () => {
  assert.deepEqual(
    mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { a: null, b: { c: 9 }, l: [3] }),
    { b: { c: 9, d: 3 }, l: [3] },
  );
});

Deno.test("JSON patch (RFC 6902): add, replace, remove, move, copy, test; a failed test or missing path is 422", () => {
  const doc = { metadata: { labels: { a: "1" } }, list: [1, 2] };
  const out = jsonPatch(doc, [
    { op: "add", path: "/metadata/labels/b~1c", value: "2" },
    { op: "replace", path: "/list/0", value: 9 },
    { op: "add", path: "/list/-", value: 3 },
    { op: "remove", path: "/list/1" },
    { op: "copy", from: "/metadata/labels/a", path: "/x" },
    { op: "move", from: "/x", path: "/y" },
    { op: "test", path: "/y", value: "1" },
  ]);
  assert.deepEqual(out, { metadata: { labels: { a: "1", "b/c": "2" } }, list: [9, 3], y: "1" });
  assert.deepEqual(doc.list, [1, 2], "the input is not changed");
  for (
    const bad of [[{ op: "test", path: "/list/0", value: 5 }], [{ op: "replace", path: "/nope", value: 1 }]]
  ) {
    assert.throws(() => jsonPatch(doc, bad), (e) => e instanceof ApiError && e.code === 422);
  }
});

Deno.test("strategic merge: lists merged by key, $patch delete/replace, $retainKeys, primitive list deletes", () => {
  const pod = {
    metadata: { finalizers: ["a"] },
    spec: {
      containers: [
        { name: "app", image: "v1", ports: [{ containerPort: 80 }], env: [{ name: "A", value: "1" }] },
        { name: "side", image: "s1" },
      ],
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } },
    },
  };
  const patched = strategicMerge(pod, {
    metadata: { finalizers: ["b"] },
    spec: {
      "$setElementOrder/containers": [{ name: "app" }],
      containers: [
        { name: "app", image: "v2", env: [{ name: "B", value: "2" }] },
        { name: "side", $patch: "delete" },
      ],
      strategy: { $retainKeys: ["type"], type: "Recreate", rollingUpdate: null },
    },
  });
  assert.deepEqual(patched, {
    metadata: { finalizers: ["a", "b"] },
    spec: {
      containers: [{
        name: "app",
        image: "v2",
        ports: [{ containerPort: 80 }],
        env: [{ name: "A", value: "1" }, { name: "B", value: "2" }],
      }],
      strategy: { type: "Recreate" },
    },
  });
  assert.deepEqual(strategicMerge({ a: { x: 1 } }, { a: { $patch: "replace", y: 2 } }), { a: { y: 2 } });
  assert.deepEqual(strategicMerge({ f: ["a", "b"] }, { "$deleteFromPrimitiveList/f": ["a"] }), { f: ["b"] });
  assert.deepEqual(
    strategicMerge({ args: ["a", "b"] }, { args: ["c"] }),
    { args: ["c"] },
    "no merge key: replaced",
  );
});
