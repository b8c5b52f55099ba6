import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { kubectlMissing, startTestCluster } from "./cluster_support.ts";

const OBJECTS = `apiVersion: v1
kind: Namespace
metadata: {name: mesh-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: foo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: meshd, namespace: mesh-system, labels: {app: meshd}}
spec:
  selector: {matchLabels: {app: meshd}}
  template: {metadata: {labels: {app: meshd}}, spec: {containers: [{name: discovery, image: mesh/meshd:test}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks: []
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: foo, labels: {app: old, istio.io/rev: canary}}
spec: {containers: [{name: app, image: x}, {name: mesh-proxy, image: mesh/proxy:test}]}
`;

Deno.test(requires(kubectlMissing(), {
  name: "x precheck: a clean cluster passes; then what it finds, in log, json and yaml, with the thresholds",
  async fn() {
    const c = await startTestCluster();
    try {
      const clean = await c.meshctl(["x", "precheck"]);
      assert.equal(clean.code, 0, clean.err);
      assert.equal(clean.out, "");
      assert.match(clean.err, /No issues found when checking the cluster/);

      await c.apply(OBJECTS);
      const log = await c.meshctl(["x", "precheck"]);
      assert.equal(log.code, 0, log.err);
      assert.equal(
        log.out,
        "Warning [MESH0004] (MutatingWebhookConfiguration istio-sidecar-injector) the injector webhook configuration " +
          "istio-sidecar-injector (Istio's) exists: two injectors would both inject pods\n" +
          "Warning [MESH0005] (Pod foo/old) pod old.foo runs the proxy of revision canary, which no injector webhook " +
          "serves\n",
      );
      const info = await c.meshctl(["x", "precheck", "--output-threshold", "Info", "-o", "json"]);
      assert.deepEqual(
        (JSON.parse(info.out) as { code: string; origin: string }[]).map((m) => `${m.code} ${m.origin}`),
        [
          "MESH0003 Deployment mesh-system/meshd",
          "MESH0004 MutatingWebhookConfiguration istio-sidecar-injector",
          "MESH0005 Pod foo/old",
        ],
      );
      const yaml = await c.meshctl(["x", "precheck", "-o", "yaml", "--skip-controlplane"]);
      assert.deepEqual(
        (parseYaml(yaml.out) as { code: string; level: string }[]).map((m) => `${m.code} ${m.level}`),
        ["MESH0005 Warning"],
      );
      const from = await c.meshctl(["x", "precheck", "-f", "1.25", "--output-threshold", "Error"]);
      assert.match(from.err, /--from-version has no effect/);
    } finally {
      await c.stop();
    }
  },
}));
