import assert from "node:assert/strict";
import { decision, matchedDecision, withAudit } from "./decision.ts";
import { compileAuthorization } from "./evaluate.ts";

Deno.test("a decision's reason is built on first read, once", () => {
  let built = 0;
  const d = decision({ allowed: false }, () => `reason ${++built}`);
  assert.equal(built, 0);
  assert.equal(d.reason, "reason 1");
  assert.equal(d.reason, "reason 1");
  assert.equal(built, 1);
});

Deno.test("a decision is frozen, and JSON shows its fields in Istio's order", () => {
  const d = matchedDecision("DENY", { namespace: "foo", name: "x" }, 2);
  assert.ok(Object.isFrozen(d));
  assert.equal(
    JSON.stringify(withAudit(d, { policy: { namespace: "foo", name: "a" }, ruleIndex: 0 })),
    '{"allowed":false,"policy":{"namespace":"foo","name":"x"},"action":"DENY","ruleIndex":2,' +
      '"reason":"denied by DENY policy foo/x rule 2","audit":{"policy":{"namespace":"foo","name":"a"},"ruleIndex":0}}',
  );
});

Deno.test("a denial by ALLOW policies is one shared object: the policy names are joined once", () => {
  const c = compileAuthorization([
    { namespace: "foo", name: "b", action: "ALLOW", rules: [{ to: [{ operation: { paths: ["/x"] } }] }] },
    { namespace: "foo", name: "a", action: "ALLOW", rules: [] },
  ]);
  const request = { method: "GET", path: "/y", port: 80 };
  const first = c.evaluate(request);
  assert.equal(c.evaluate(request), first);
  assert.equal(first.reason, "denied: no rule of ALLOW policies foo/a, foo/b matched");
});

Deno.test("each rule keeps its own decision across requests", () => {
  const c = compileAuthorization([{
    namespace: "foo",
    name: "deny",
    action: "DENY",
    rules: [{ to: [{ operation: { paths: ["/a"] } }] }, { to: [{ operation: { paths: ["/b"] } }] }],
  }]);
  const at = (path: string) => c.evaluate({ method: "GET", path, port: 80 });
  assert.deepEqual([at("/a").ruleIndex, at("/b").ruleIndex, at("/a").ruleIndex], [0, 1, 0]);
  assert.equal(at("/b").reason, "denied by DENY policy foo/deny rule 1");
});
