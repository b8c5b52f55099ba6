import assert from "node:assert/strict";
import { formatFieldPath } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { workloadEntry } from "./workload_entry.ts";
import { workloadGroup } from "./workload_group.ts";

const entry = (annotation: string) => ({
  apiVersion: "networking.istio.io/v1",
  kind: "WorkloadEntry",
  metadata: { name: "gw-1", namespace: "istio-system", annotations: { "proxy.istio.io/config": annotation } },
  spec: { address: "10.0.0.9" },
});
const group = (annotation: string) => ({
  apiVersion: "networking.istio.io/v1",
  kind: "WorkloadGroup",
  metadata: { name: "gw", namespace: "istio-system" },
  spec: { metadata: { annotations: { "proxy.istio.io/config": annotation } }, template: {} },
});
const show = (findings: ReturnType<typeof validateResource>) =>
  findings.map((f) => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`);

Deno.test("proxy.istio.io/config: a valid numTrustedProxies is accepted on WorkloadEntry and WorkloadGroup", () => {
  assert.deepEqual(
    show(validateResource(workloadEntry, entry("gatewayTopology: {numTrustedProxies: 2}"))),
    [],
  );
  assert.deepEqual(
    show(validateResource(workloadGroup, group("gatewayTopology: {numTrustedProxies: 2}"))),
    [],
  );
});

Deno.test("proxy.istio.io/config: a bad value is an error naming the annotation and field", () => {
  const [e] = validateResource(workloadEntry, entry("gatewayTopology: {numTrustedProxies: 300}"));
  assert.equal(e.severity, "error");
  assert.deepEqual(e.path, ["metadata", "annotations", "proxy.istio.io/config"]);
  assert.equal(e.message, "gatewayTopology.numTrustedProxies: 300 is not a whole number from 0 to 255");
  const [g] = validateResource(workloadGroup, group("gatewayTopology: ["));
  assert.equal(g.severity, "error");
  assert.deepEqual(g.path, ["spec", "metadata", "annotations", "proxy.istio.io/config"]);
  assert.match(g.message, /^invalid YAML/);
});

Deno.test("proxy.istio.io/config: fields the mesh does not read warn", () => {
  assert.deepEqual(show(validateResource(workloadEntry, entry("concurrency: 2"))), [
    'warning metadata.annotations["proxy.istio.io/config"]: field concurrency has no effect',
  ]);
});
