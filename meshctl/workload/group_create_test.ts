import assert from "node:assert/strict";
import { parse } from "yaml";
import { meshctl } from "../test_support.ts";
import { keyValues, workloadGroupYaml } from "./group_create.ts";

Deno.test("workload group create: YAML that meshctl validate accepts", async () => {
  const r = await meshctl([
    "x",
    "workload",
    "group",
    "create",
    "--name",
    "vm",
    "-n",
    "foo",
    "-l",
    "app=vm,version=v1",
    "-a",
    "note=x",
    "-p",
    "http=8080",
    "-p",
    "grpc=9090",
    "-s",
    "vmsa",
    "--network",
    "net1",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(parse(r.out), {
    apiVersion: "networking.mesh.io/v1",
    kind: "WorkloadGroup",
    metadata: { name: "vm", namespace: "foo" },
    spec: {
      metadata: { labels: { app: "vm", version: "v1" }, annotations: { note: "x" } },
      template: { serviceAccount: "vmsa", ports: { http: 8080, grpc: 9090 }, network: "net1" },
    },
  });
  const v = await meshctl(["validate", "-f", "-"], { stdin: r.out });
  assert.equal(v.code, 0, v.out);
});

Deno.test("workload group create: bad input names the flag", async () => {
  assert.throws(() => keyValues("--labels", ["app"]), /--labels: "app" is not key=value/);
  assert.throws(
    () =>
      workloadGroupYaml({
        name: "vm",
        namespace: "foo",
        labels: { "": "x" },
        annotations: {},
        ports: {},
        serviceAccount: "default",
      }),
    /<generated>:\d+: document 1: WorkloadGroup foo\/vm: spec\.metadata\.labels\[""\]: invalid label key/,
  );
  const noNs = await meshctl(["x", "workload", "group", "create", "--name", "vm"]);
  assert.equal(noNs.code, 1);
  assert.match(noNs.err, /needs the group's namespace: -n <namespace>/);
  const noName = await meshctl(["x", "workload", "group", "create", "-n", "foo"]);
  assert.equal(noName.code, 2);
  assert.match(noName.err, /required option '--name <name>' not specified/);
});
