import assert from "node:assert/strict";
import { structToJson } from "../../shared/internal/xds/struct.ts";
import { nodeId, nodeMetadata, workloadKey, xdsNode } from "./node.ts";

Deno.test("node: Istio's sidecar id, NAMESPACE and WORKLOAD_NAME as a Struct", () => {
  const o = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo", metadata: { LABELS: { app: "sleep" } } };
  assert.equal(nodeId(o), "sidecar~10.1.0.3~sleep-1.foo~foo.svc.cluster.local");
  const node = xdsNode(o);
  assert.equal(node.id, "sidecar~10.1.0.3~sleep-1.foo~foo.svc.cluster.local");
  assert.deepEqual(structToJson(node.metadata), {
    LABELS: { app: "sleep" },
    NAMESPACE: "foo",
    WORKLOAD_NAME: "sleep-1",
  });
  assert.equal(workloadKey(o), "foo/sleep-1");
});

Deno.test("node: auto-registration names the group and the instance IPs, and the key meshd will use", () => {
  const o = {
    ip: "fd00::5",
    extraIps: ["10.0.0.5"],
    name: "vm-7",
    namespace: "bar",
    autoRegisterGroup: "ratings",
  };
  assert.deepEqual(nodeMetadata(o), {
    NAMESPACE: "bar",
    AUTO_REGISTER_GROUP: "ratings",
    INSTANCE_IPS: "fd00::5,10.0.0.5",
  });
  assert.equal(workloadKey(o), "bar/ratings-fd00--5");
  assert.equal(workloadKey({ ...o, metadata: { NETWORK: "n1" } }), "bar/ratings-fd00--5-n1");
});

Deno.test("node: bad IPs and names are refused with the field named", () => {
  assert.throws(
    () => xdsNode({ ip: "10.1.0", name: "a", namespace: "foo" }),
    /"10.1.0" is not an IP address/,
  );
  assert.throws(
    () => xdsNode({ ip: "10.1.0.1", name: "A_b", namespace: "foo" }),
    /name "A_b" is not a DNS-1123/,
  );
  assert.throws(
    () => xdsNode({ ip: "10.1.0.1", name: "a", namespace: "f.o" }),
    /namespace "f.o" may not contain dots/,
  );
});
