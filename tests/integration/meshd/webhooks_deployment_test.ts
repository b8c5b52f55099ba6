/**
 * Injection of a Deployment's pod through the test Kubernetes API server (deploy/lab/kube_api), driven by
 * kubectl (issue 14, item 7): Istio's httpbin sample (ServiceAccount, Service, Deployment) is applied in a
 * namespace labelled `mesh-injection=enabled`; the test then does the ReplicaSet controller's part, which
 * that server does not run (a ReplicaSet owned by the Deployment, and a pod from its template with
 * `generateName`, `pod-template-hash` and an ownerReference, created with `kubectl create -f`); the pod
 * that `kubectl get -o yaml` shows carries meshd's sidecar, init container and volumes, while the
 * Deployment and the ReplicaSet themselves are stored unchanged.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { parse as parseYaml } from "yaml";
import { startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import type { JsonObject } from "../../../meshd/webhooks/admission.ts";
import { startCa, tempDir } from "../../../meshd/ca/test_support.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { startTestWebhooks } from "./webhook_support.ts";

const SAMPLE = new URL("../../fixtures/istio_samples/httpbin.yaml", import.meta.url).pathname;
const HASH = "5c7b9d8f6d";

// deno-lint-ignore no-explicit-any
type Obj = any;

const names = (list: { name: string }[] | undefined) => (list ?? []).map((c) => c.name);

Deno.test(requires(kubectlMissing(), {
  name: "injection: the pod of a kubectl-applied Deployment is stored with the sidecar (kubectl get -o yaml)",
  async fn() {
    const api = await startKubeApi();
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir);
    const hooks = await startTestWebhooks(ca, dir);
    const kc = api.kubeconfig;
    const apply = (o: JsonObject) => kubectlOk(kc, ["apply", "-f", "-"], JSON.stringify(o));
    try {
      await apply({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingWebhookConfiguration",
        metadata: { name: "mesh-sidecar-injector" },
        webhooks: [{
          name: "namespace.sidecar-injector.mesh.io",
          clientConfig: {
            url: `https://localhost:${hooks.port}/inject`,
            caBundle: Buffer.from(ca.trustBundlePem).toString("base64"),
          },
          rules: [{ operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"] }],
          namespaceSelector: { matchLabels: { "mesh-injection": "enabled" } },
          admissionReviewVersions: ["v1"],
          sideEffects: "None",
          failurePolicy: "Fail",
        }],
      });
      await apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: "foo" } });
      await kubectlOk(kc, ["label", "namespace", "foo", "mesh-injection=enabled"]);
      await kubectlOk(kc, ["apply", "-n", "foo", "-f", SAMPLE]);

      const deployment: Obj = JSON.parse(
        await kubectlOk(kc, ["get", "-n", "foo", "deployment", "httpbin", "-o", "json"]),
      );
      assert.deepEqual(
        names(deployment.spec.template.spec.containers),
        ["httpbin"],
        "the Deployment was mutated",
      );

      // The ReplicaSet controller's part, as kube-controller-manager does it.
      const template = deployment.spec.template;
      const labels = { ...template.metadata.labels, "pod-template-hash": HASH };
      const owner = (o: Obj) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.metadata.name,
        uid: o.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      });
      await apply({
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: `httpbin-${HASH}`, namespace: "foo", labels, ownerReferences: [owner(deployment)] },
        spec: {
          replicas: 1,
          selector: { matchLabels: { ...deployment.spec.selector.matchLabels, "pod-template-hash": HASH } },
          template: { metadata: { labels }, spec: template.spec },
        },
      });
      const rs: Obj = JSON.parse(
        await kubectlOk(kc, ["get", "-n", "foo", "replicaset", `httpbin-${HASH}`, "-o", "json"]),
      );
      assert.deepEqual(names(rs.spec.template.spec.containers), ["httpbin"], "the ReplicaSet was mutated");
      const created = (await kubectlOk(
        kc,
        ["create", "-f", "-", "-o", "name"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            generateName: `httpbin-${HASH}-`,
            namespace: "foo",
            labels,
            ownerReferences: [owner(rs)],
          },
          spec: rs.spec.template.spec,
        }),
      )).trim();
      assert.match(created, new RegExp(`^pod/httpbin-${HASH}-[a-z0-9]{5}$`));

      const pod: Obj = parseYaml(await kubectlOk(kc, ["get", "-n", "foo", created, "-o", "yaml"]));
      assert.deepEqual(names(pod.spec.initContainers), ["mesh-init"]);
      assert.deepEqual(names(pod.spec.containers), ["httpbin", "mesh-proxy"]);
      assert.deepEqual(
        pod.spec.containers[0],
        rs.spec.template.spec.containers[0],
        "the app container changed",
      );
      assert.ok(pod.metadata.annotations["sidecar.mesh.io/status"], JSON.stringify(pod.metadata));
      // Kept, plus Istio's label that drives automatic mutual TLS towards the pod.
      assert.deepEqual(pod.metadata.labels, { ...labels, "security.istio.io/tlsMode": "istio" });
      assert.deepEqual(pod.metadata.ownerReferences.map((r: Obj) => `${r.kind}/${r.name}`), [
        `ReplicaSet/httpbin-${HASH}`,
      ]);
      assert.equal(pod.spec.serviceAccountName, "httpbin");
      const proxy = pod.spec.containers[1];
      assert.ok(proxy.args.includes("--inbound=8080=127.0.0.1:8080"), proxy.args.join(" "));
      const token = pod.spec.volumes.find((v: Obj) => v.projected)?.projected.sources[0].serviceAccountToken;
      assert.equal(token?.audience, "mesh-ca");
    } finally {
      await hooks.stop();
      await ca.stop();
      await cleanup();
      await api.stop();
    }
  },
}));
