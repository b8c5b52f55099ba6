/**
 * meshd's webhooks behind the test Kubernetes API server (deploy/lab/kube_api), driven by kubectl:
 * the caBundle patcher writes the mesh root into both webhook configurations, then `kubectl apply`
 * of Istio's httpbin pod in a namespace labelled `mesh-injection=enabled` stores the injected pod,
 * and an invalid AuthorizationPolicy is refused by `kubectl apply` with the field named.
 */
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { kubectl, kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import type { JsonObject } from "../../../meshd/webhooks/admission.ts";
import { startCaBundlePatcher } from "../../../meshd/webhooks/ca_bundle_patcher.ts";
import { httpbinPod, INVALID_POLICY } from "../../../meshd/webhooks/test_support.ts";
import { startCa, tempDir } from "../../../meshd/ca/test_support.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { QUIET, restApi, startTestWebhooks } from "./webhook_support.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

function webhookConfig(
  kind: string,
  name: string,
  url: string,
  rules: JsonObject[],
  extra: JsonObject = {},
): string {
  return JSON.stringify({
    apiVersion: "admissionregistration.k8s.io/v1",
    kind,
    metadata: { name },
    webhooks: [{
      name: `${name}.mesh.io`,
      clientConfig: { url },
      rules,
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      failurePolicy: "Fail",
      ...extra,
    }],
  });
}

Deno.test(requires(kubectlMissing(), {
  name:
    "webhooks through kubectl: the patched caBundle is trusted, a pod is injected, an invalid policy refused",
  async fn() {
    const api = await startKubeApi();
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir);
    const http = Deno.createHttpClient({ caCerts: [api.server.caPem] });
    const hooks = await startTestWebhooks(ca, dir);
    const kc = api.kubeconfig;
    const patcher = startCaBundlePatcher({
      api: restApi(api, http),
      injectionName: "mesh-sidecar-injector",
      validationName: "mesh-mesh-system",
      trustBundlePem: () => ca.trustBundlePem,
      onBundleChange: (l) => ca.onBundleChange(l),
      counters: { attempts() {}, retries() {}, failures() {} },
      log: QUIET,
      recheckMs: 60_000,
    });
    try {
      await kubectlOk(kc, ["apply", "-f", `${ROOT}deploy/crds/authorizationpolicies.security.mesh.io.yaml`]);
      const base = `https://localhost:${hooks.port}`;
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig(
          "MutatingWebhookConfiguration",
          "mesh-sidecar-injector",
          `${base}/inject`,
          [{ operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"] }],
          { namespaceSelector: { matchLabels: { "mesh-injection": "enabled" } } },
        ),
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("ValidatingWebhookConfiguration", "mesh-mesh-system", `${base}/validate`, [{
          operations: ["CREATE", "UPDATE"],
          apiGroups: ["security.mesh.io"],
          apiVersions: ["*"],
          resources: ["*"],
        }]),
      );
      // Before the patch the API server cannot verify meshd's certificate: failurePolicy Fail refuses the pod.
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "foo" } }),
      );
      await kubectlOk(kc, ["label", "namespace", "foo", "mesh-injection=enabled"]);
      const pod = httpbinPod();
      const meta = pod.metadata as JsonObject;
      delete meta.generateName;
      meta.name = "httpbin";
      delete meta.ownerReferences;
      const before = await kubectl(kc, ["apply", "-f", "-"], JSON.stringify(pod));
      assert.notEqual(before.code, 0, "a pod was admitted while the webhook's certificate was untrusted");

      await patcher.run();
      await kubectlOk(kc, ["apply", "-f", "-"], JSON.stringify(pod));
      const stored = parseYaml(await kubectlOk(kc, ["get", "-n", "foo", "pod", "httpbin", "-o", "yaml"]));
      assert.deepEqual(stored.spec.containers.map((c: JsonObject) => c.name), ["httpbin", "mesh-proxy"]);
      assert.deepEqual(stored.spec.initContainers.map((c: JsonObject) => c.name), ["mesh-init"]);
      assert.ok(stored.metadata.annotations["sidecar.mesh.io/status"]);

      const policy = { ...INVALID_POLICY, apiVersion: "security.mesh.io/v1" };
      const refused = await kubectl(kc, ["apply", "-f", "-"], JSON.stringify(policy));
      assert.notEqual(refused.code, 0);
      assert.match(
        refused.stderr,
        /admission webhook "mesh-mesh-system\.mesh\.io" denied the request: configuration is invalid: AuthorizationPolicy foo\/deny-all: spec\.action: /,
      );
      assert.equal((await kubectl(kc, ["get", "-n", "foo", "authorizationpolicies", "deny-all"])).code, 1);
    } finally {
      patcher.stop();
      http.close();
      await hooks.stop();
      await ca.stop();
      await cleanup();
      await api.stop();
    }
  },
}));
