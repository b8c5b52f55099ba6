import assert from "node:assert/strict";
import type { AnalysisInput } from "../analyze/input.ts";
import { parseLabels, resolveWorkload } from "./workload.ts";

const input = {
  resources: [{
    kind: "WorkloadEntry",
    namespace: "foo",
    name: "vm1",
    resource: { spec: { labels: { app: "httpbin" } } },
  }],
  workloads: [{ namespace: "bar", name: "web-1", labels: { app: "web" } }],
  target: "test input",
} as unknown as AnalysisInput;

Deno.test("parseLabels: comma lists and repeats; bad items named", () => {
  assert.deepEqual(parseLabels(["app=a,version=v1", "x="]), { app: "a", version: "v1", x: "" });
  assert.throws(() => parseLabels(["app"]), /--labels: "app" is not key=value/);
  assert.throws(() => parseLabels(["=v"]), /"=v" is not key=value/);
});

Deno.test("resolveWorkload: labels, WorkloadEntry, registry workload, errors", () => {
  const cases: { flags: { target?: string; labels: string[]; namespace: string }; want: unknown }[] = [
    {
      flags: { labels: ["app=x"], namespace: "" },
      want: { namespace: "default", name: undefined, labels: { app: "x" } },
    },
    {
      flags: { labels: ["app=x"], namespace: "foo" },
      want: { namespace: "foo", name: undefined, labels: { app: "x" } },
    },
    {
      flags: { target: "vm1.foo", labels: [], namespace: "" },
      want: { namespace: "foo", name: "vm1", labels: { app: "httpbin" } },
    },
    {
      flags: { target: "we/vm1", labels: [], namespace: "foo" },
      want: { namespace: "foo", name: "vm1", labels: { app: "httpbin" } },
    },
    {
      flags: { target: "pod/web-1.bar", labels: [], namespace: "" },
      want: { namespace: "bar", name: "web-1", labels: { app: "web" } },
    },
  ];
  for (const c of cases) assert.deepEqual(resolveWorkload(input, c.flags), c.want, JSON.stringify(c.flags));
  assert.throws(
    () => resolveWorkload(input, { target: "vm2.foo", labels: [], namespace: "" }),
    /workload vm2.foo not found in test input \(known: vm1.foo, web-1.bar\)/,
  );
  assert.throws(() => resolveWorkload(input, { labels: [], namespace: "foo" }), /name a workload/);
  assert.throws(
    () => resolveWorkload(input, { target: "svc/x", labels: [], namespace: "foo" }),
    /resource type "svc" is not supported/,
  );
});
