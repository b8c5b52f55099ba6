import assert from "node:assert/strict";
import { labelsMatch, policyAppliesTo } from "./workload_selection.ts";

const httpbinFoo = { namespace: "foo", labels: { app: "httpbin", version: "v1" } };
const cases: {
  name: string;
  ns?: string;
  selector?: Record<string, string>;
  root?: string;
  want: boolean;
}[] = [
  { name: "namespace-wide policy in the workload's namespace", ns: "foo", want: true },
  { name: "namespace-wide policy in another namespace", ns: "bar", want: false },
  { name: "mesh-wide policy in the root namespace", ns: "mesh-system", want: true },
  {
    name: "selector matching in the workload's namespace",
    ns: "foo",
    selector: { app: "httpbin" },
    want: true,
  },
  {
    name: "selector with every label matching",
    ns: "foo",
    selector: { app: "httpbin", version: "v1" },
    want: true,
  },
  {
    name: "selector with one label differing",
    ns: "foo",
    selector: { app: "httpbin", version: "v2" },
    want: false,
  },
  { name: "selector with a label the workload lacks", ns: "foo", selector: { tier: "x" }, want: false },
  {
    name: "selector matching, policy in another namespace",
    ns: "bar",
    selector: { app: "httpbin" },
    want: false,
  },
  {
    name: "selector in the root namespace matches workloads of all namespaces",
    ns: "mesh-system",
    selector: { app: "httpbin" },
    want: true,
  },
  { name: "a custom root namespace", ns: "istio-system", root: "istio-system", want: true },
  { name: "the default root namespace is not istio-system", ns: "istio-system", want: false },
  { name: "a policy without namespace is in default", want: false },
  { name: "an empty selector is like none", ns: "foo", selector: {}, want: true },
];
for (const c of cases) {
  Deno.test(`policyAppliesTo: ${c.name}`, () => {
    const policy = {
      metadata: c.ns === undefined ? {} : { namespace: c.ns },
      spec: c.selector === undefined ? {} : { selector: { matchLabels: c.selector } },
    };
    assert.equal(policyAppliesTo(policy, httpbinFoo, { rootNamespace: c.root }), c.want);
  });
}

Deno.test("labelsMatch does not match inherited object properties", () => {
  assert.equal(labelsMatch({ toString: "x" }, {}), false);
  assert.equal(labelsMatch({ constructor: "x" }, { constructor: "x" }), true);
});
