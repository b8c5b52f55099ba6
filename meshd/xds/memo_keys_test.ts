import assert from "node:assert/strict";
import { buildPushContext } from "../push_context/push_context.ts";
import { configResource as res } from "../push_context/test_support.ts";
import { withConnected } from "../push_context/incremental.ts";
import { memoKeys, proxiedView, sameLabels } from "./memo_keys.ts";

const ctx = buildPushContext([
  res("WorkloadEntry", "foo", "a", { address: "10.1.0.2", labels: { app: "x", v: "1" } }),
  res("WorkloadEntry", "foo", "b", { address: "10.1.0.3", labels: { v: "1", app: "x" } }),
  res("WorkloadEntry", "bar", "c", { address: "10.1.0.4", labels: { app: "x", v: "1" } }),
], { version: "1" });
const w = (key: string) => ctx.workloads.get(key)!;

Deno.test("label sets are the same whatever their order, and differ by a key or a value", () => {
  assert.equal(sameLabels({ a: "1", b: "2" }, { b: "2", a: "1" }), true);
  assert.equal(sameLabels({ a: "1" }, { a: "1", b: "2" }), false);
  assert.equal(sameLabels({ a: "1", b: "2" }, { a: "1" }), false);
  assert.equal(sameLabels({ a: "1" }, { a: "2" }), false);
});

Deno.test("workloads of one namespace and label set share their policy keys, not their own lists'", () => {
  const [a, b, c] = [memoKeys(w("foo/a")), memoKeys(w("foo/b")), memoKeys(w("bar/c"))];
  assert.equal(a.authorization, b.authorization);
  assert.notEqual(a.authorization, c.authorization, "another namespace");
  assert.notEqual(a.workload, b.workload);
  assert.notEqual(a.workload, a.connectingWorkload);
});

Deno.test("the proxied view is what withConnected derives for a connected proxy, made once per view", () => {
  const view = proxiedView(w("foo/a"));
  assert.equal(proxiedView(w("foo/a")), view);
  assert.equal(w("foo/a").proxied, false, "the push context's view is left as it is");
  assert.deepEqual(view, withConnected(ctx, new Set(["foo/a"]), "2").context.workloads.get("foo/a"));
});
