import assert from "node:assert/strict";
import { discovery } from "./cli_test_support.ts";

// Istio's authz-tcp task: tcp-echo's ports are TCP, and an ALLOW rule with `methods` is dropped there.
const CONFIG = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tcp-echo, namespace: foo}
spec:
  hosts: [tcp-echo.foo.svc.cluster.local]
  ports: [{name: tcp, number: 9000, protocol: TCP}, {name: tcp-other, number: 9001, protocol: TCP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: tcp-echo}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: tcp-echo-1, namespace: foo}
spec: {address: 10.229.0.3, labels: {app: tcp-echo}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: tcp-policy, namespace: foo}
spec:
  selector: {matchLabels: {app: tcp-echo}}
  action: ALLOW
  rules: [{to: [{operation: {methods: [GET], ports: ["9000"]}}]}]
`;

Deno.test("discovery: an ALLOW rule with HTTP-only fields on a TCP workload is warned once (scope authorization)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/tcp.yaml`, CONFIG);
    const r = await discovery(["--configDir", dir]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n").filter((l) => l.includes("\twarn\tauthorization\t"));
    assert.equal(lines.length, 1, r.out);
    assert.match(
      lines[0],
      /\twarn\tauthorization\tAuthorizationPolicy foo\/tcp-policy \(ALLOW\) spec\.rules\[0\] has HTTP-only fields \(to\[0\]\.operation\.methods\) and applies to workload foo\/tcp-echo-1 ports 9000 \(TCP\), 9001 \(TCP\): the rule is dropped there/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
