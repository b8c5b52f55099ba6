import assert from "node:assert/strict";
import { applicableAuthorizationPolicies, authorizationPolicyView } from "./applicable.ts";

const ap = (namespace: string, name: string, spec: Record<string, unknown>) => ({
  metadata: { namespace, name },
  spec,
});
const policies = [
  ap("foo", "z-allow", { rules: [{}] }),
  ap("foo", "deny-admin", { action: "DENY", rules: [{ to: [{ operation: { paths: ["/admin"] } }] }] }),
  ap("mesh-system", "global-audit", { action: "AUDIT", rules: [{}] }),
  ap("foo", "for-other", { selector: { matchLabels: { app: "other" } }, rules: [{}] }),
  ap("foo", "for-httpbin", { selector: { matchLabels: { app: "httpbin" } } }),
  ap("bar", "elsewhere", { action: "DENY", rules: [{}] }),
];

Deno.test("applicableAuthorizationPolicies: root, namespace and selected policies, merged by action", () => {
  const m = applicableAuthorizationPolicies(policies, { namespace: "foo", labels: { app: "httpbin" } });
  assert.deepEqual(m.all.map((p) => `${p.namespace}/${p.name} ${p.action} ${p.scope}`), [
    "foo/deny-admin DENY NAMESPACE",
    "foo/for-httpbin ALLOW WORKLOAD_SELECTOR",
    "foo/z-allow ALLOW NAMESPACE",
    "mesh-system/global-audit AUDIT GLOBAL",
  ]);
  assert.deepEqual(m.deny.map((p) => p.name), ["deny-admin"]);
  assert.deepEqual(m.allow.map((p) => p.name), ["for-httpbin", "z-allow"]);
  assert.deepEqual(m.audit.map((p) => p.name), ["global-audit"]);
  assert.deepEqual(m.custom, []);
});

Deno.test("authorizationPolicyView defaults the namespace, action and rules", () => {
  assert.deepEqual(authorizationPolicyView({ metadata: { name: "x" }, spec: {} }), {
    namespace: "default",
    name: "x",
    action: "ALLOW",
    rules: [],
  });
});
