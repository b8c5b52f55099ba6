/**
 * The app prober rewrite through the test Kubernetes API server (deploy/lab/kube_api) and kubectl:
 * `kubectl apply` of a pod with an httpGet probe on a named port, a tcpSocket probe and an exec probe,
 * in a namespace labelled `mesh-injection=enabled`, is stored with the first two pointing at the
 * proxy's status port and the originals in the proxy's ISTIO_KUBE_APP_PROBERS (`kubectl get -o yaml`);
 * a pod annotated `sidecar.istio.io/rewriteAppHTTPProbers: "false"` keeps its probes.
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

const LIVENESS = { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 };
const READINESS = { tcpSocket: { port: 8080 } };
const STARTUP = { exec: { command: ["cat", "/tmp/started"] } };

function pod(name: string, annotations: Record<string, string> = {}): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "foo", annotations },
    spec: {
      containers: [{
        name: "app",
        image: "app:1",
        ports: [{ name: "http", containerPort: 8080 }],
        livenessProbe: LIVENESS,
        readinessProbe: READINESS,
        startupProbe: STARTUP,
      }],
    },
  });
}

Deno.test(requires(kubectlMissing(), {
  name:
    "probe rewrite through kubectl: the stored pod's probes point at 15020, the originals are the proxy's",
  async fn() {
    const api = await startKubeApi();
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir);
    const hooks = await startTestWebhooks(ca, dir);
    const kc = api.kubeconfig;
    try {
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "admissionregistration.k8s.io/v1",
          kind: "MutatingWebhookConfiguration",
          metadata: { name: "mesh-sidecar-injector" },
          webhooks: [{
            name: "mesh-sidecar-injector.mesh.io",
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
        }),
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "foo" } }),
      );
      await kubectlOk(kc, ["label", "namespace", "foo", "mesh-injection=enabled"]);

      await kubectlOk(kc, ["apply", "-f", "-"], pod("probed"));
      const stored = parseYaml(await kubectlOk(kc, ["get", "-n", "foo", "pod", "probed", "-o", "yaml"]));
      const [app, proxy] = stored.spec.containers as JsonObject[];
      assert.equal(proxy.name, "mesh-proxy");
      assert.deepEqual(app.livenessProbe, {
        httpGet: { path: "/app-health/app/livez", port: 15020, scheme: "HTTP" },
        periodSeconds: 5,
      });
      assert.deepEqual(app.readinessProbe, {
        httpGet: { path: "/app-health/app/readyz", port: 15020, scheme: "HTTP" },
      });
      assert.deepEqual(app.startupProbe, STARTUP);
      assert.ok((proxy.args as string[]).includes("--statusPort=15020"));
      const env = (proxy.env as JsonObject[]).find((e) => e.name === "ISTIO_KUBE_APP_PROBERS");
      assert.deepEqual(JSON.parse(env!.value as string), {
        "/app-health/app/livez": { httpGet: { path: "/healthz", port: 8080 } },
        "/app-health/app/readyz": { tcpSocket: { port: 8080 } },
      });

      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        pod("kept", { "sidecar.istio.io/rewriteAppHTTPProbers": "false" }),
      );
      const kept = parseYaml(await kubectlOk(kc, ["get", "-n", "foo", "pod", "kept", "-o", "yaml"]));
      const [keptApp, keptProxy] = kept.spec.containers as JsonObject[];
      assert.equal(keptProxy.name, "mesh-proxy", "the pod was not injected at all");
      assert.deepEqual(keptApp.livenessProbe, LIVENESS);
      assert.deepEqual(keptApp.readinessProbe, READINESS);
      assert.ok(!(keptProxy.env as JsonObject[]).some((e) => e.name === "ISTIO_KUBE_APP_PROBERS"));
    } finally {
      await hooks.stop();
      await ca.stop();
      await cleanup();
      await api.stop();
    }
  },
}));
