import assert from "node:assert/strict";
import { meshctl, ROOT, startLiveMeshd } from "../test_support.ts";
import { EXIT_DENIED } from "./command.ts";

const WORKLOAD_ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm1, namespace: foo}
spec:
  address: 10.1.0.9
  labels: {app: httpbin}
`;

Deno.test("authz check and explain against a live meshd: target resolved through its registry", async () => {
  const policies = [
    "01_authorization_policy_deny_method_get.yaml",
    "03_authorization_policy_allow_path_ip.yaml",
  ];
  const yaml = await Promise.all(
    policies.map((f) => Deno.readTextFile(`${ROOT}tests/fixtures/istio/authz-deny/${f}`)),
  );
  const meshd = await startLiveMeshd([WORKLOAD_ENTRY, ...yaml].join("---\n"));
  try {
    const at = ["--debug-address", meshd.debugAddress];
    const check = await meshctl(["x", "authz", "check", "we/vm1.foo", ...at]);
    assert.equal(check.code, 0, check.err);
    assert.match(
      check.out,
      /^Checked workload vm1\.foo \(labels app=httpbin\): 2 AuthorizationPolicies apply$/m,
    );
    assert.match(check.out, /^DENY {3,}WORKLOAD_SELECTOR {3,}deny-method-get\.foo {3,}1$/m);
    const post = await meshctl([
      "x",
      "authz",
      "explain",
      "vm1.foo",
      "--method",
      "POST",
      "--path",
      "/ip",
      ...at,
    ]);
    assert.equal(post.code, 0, post.out + post.err);
    assert.match(post.out, /^ALLOW: allowed by ALLOW policy foo\/allow-path-ip rule 0$/m);
    const get = await meshctl(["x", "authz", "explain", "vm1.foo", "--path", "/ip", ...at]);
    assert.equal(get.code, EXIT_DENIED, get.out + get.err);
    assert.match(
      get.out,
      /^path normalization: DECODE_AND_MERGE_SLASHES \(from meshd's mesh config\)/m,
    );
    const missing = await meshctl(["x", "authz", "check", "nope.foo", ...at]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /workload nope\.foo not found in meshd at .*known: .*vm1\.foo/);
  } finally {
    await meshd.stop();
  }
});

Deno.test("authz explain against a live meshd whose meshConfig chose BASE: //headers passes a DENY on /headers", async () => {
  const deny = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-headers, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules: [{to: [{operation: {paths: [/headers]}}]}]
`;
  const meshd = await startLiveMeshd([WORKLOAD_ENTRY, deny].join("---\n"), {
    meshConfig: "pathNormalization:\n  normalization: BASE\n",
  });
  try {
    const explain = (path: string) =>
      meshctl(["x", "authz", "explain", "vm1.foo", "--path", path, "--debug-address", meshd.debugAddress]);
    const merged = await explain("//headers");
    assert.equal(merged.code, 0, merged.out + merged.err);
    assert.match(
      merged.out,
      /^path normalization: BASE \(from meshd's mesh config\); path matched as \/\/headers$/m,
    );
    const dots = await explain("/a/../headers");
    assert.equal(dots.code, EXIT_DENIED, dots.out + dots.err);
  } finally {
    await meshd.stop();
  }
});
