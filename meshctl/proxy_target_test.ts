import assert from "node:assert/strict";
import { adminAddress, parseTarget } from "./proxy_target.ts";

Deno.test("parseTarget: [<type>/]<name>[.<namespace>]", () => {
  const cases: [string, string, { name: string; namespace: string }][] = [
    ["httpbin-1", "default", { name: "httpbin-1", namespace: "default" }],
    ["httpbin-1.foo", "default", { name: "httpbin-1", namespace: "foo" }],
    ["pod/httpbin-1.foo", "bar", { name: "httpbin-1", namespace: "foo" }],
    ["we/httpbin-1", "bar", { name: "httpbin-1", namespace: "bar" }],
    ["httpbin-10.213.0.3.foo", "bar", { name: "httpbin-10.213.0.3", namespace: "foo" }],
  ];
  for (const [text, ns, want] of cases) assert.deepEqual(parseTarget(text, ns), want, text);
  assert.throws(
    () => parseTarget("deployment/httpbin", "foo"),
    /resource type "deployment" is not supported/,
  );
  assert.throws(() => parseTarget(".foo", "foo"), /expected \[<type>\/\]<name>\[\.<namespace>\]/);
});

Deno.test("adminAddress: --proxy-admin-port wins, else PROXY_CONFIG.proxyAdminPort, else the default", () => {
  const p = {
    connection: "c",
    proxy: "p",
    workload: "foo/a",
    metadata: { PROXY_CONFIG: { proxyAdminPort: 15123 } },
  };
  assert.equal(adminAddress(p, 16000, 15000), "127.0.0.1:16000");
  assert.equal(adminAddress(p, undefined, 15000), "127.0.0.1:15123");
  assert.equal(adminAddress({ ...p, metadata: {} }, undefined, 15000), "127.0.0.1:15000");
});
