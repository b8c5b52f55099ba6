import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { parse as parseYaml } from "yaml";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { startKubeApi } from "./mod.ts";
import { makeServerPki } from "./pki.ts";
import { kubectl, kubectlMissing, kubectlOk } from "./test_support.ts";
import { isObject, type KubeObject } from "./types.ts";

/** A webhook server: labels pods `injected=true`, refuses pods labelled `bad=yes`; records the reviews. */
async function startWebhook(): Promise<
  { port: number; caPem: string; reviews: KubeObject[]; close(): Promise<void> }
> {
  const pki = await makeServerPki(["hook.default.svc"]);
  const reviews: KubeObject[] = [];
  const server = https.createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const review = JSON.parse(Buffer.concat(chunks).toString());
      reviews.push(review);
      const uid = review.request.uid;
      const labels = review.request.object?.metadata?.labels ?? {};
      let response: KubeObject = { uid, allowed: true };
      if (req.url === "/mutate") {
        const ops = labels && Object.keys(labels).length
          ? [{ op: "add", path: "/metadata/labels/injected", value: "true" }]
          : [{ op: "add", path: "/metadata/labels", value: { injected: "true" } }];
        response = { uid, allowed: true, patchType: "JSONPatch", patch: btoa(JSON.stringify(ops)) };
      } else if (labels.bad === "yes") {
        response = {
          uid,
          allowed: false,
          status: { code: 422, message: "spec.containers[0].image: bad images are refused" },
        };
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    caPem: pki.caPem,
    reviews,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

function webhookConfig(kind: string, name: string, clientConfig: KubeObject, extra: KubeObject = {}): string {
  return JSON.stringify({
    apiVersion: "admissionregistration.k8s.io/v1",
    kind,
    metadata: { name },
    webhooks: [{
      name: `${name}.test`,
      clientConfig,
      rules: [{
        operations: ["CREATE", "UPDATE"],
        apiGroups: [""],
        apiVersions: ["v1"],
        resources: ["pods"],
      }],
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      ...extra,
    }],
  });
}

function pod(name: string, labels: Record<string, string>, namespace = "default"): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels },
    spec: { containers: [{ name: "app", image: "example/app:1" }] },
  });
}

Deno.test(requires(kubectlMissing(), {
  name:
    "admission: kubectl apply goes through a mutating (JSONPatch) then a validating webhook over TLS trusting caBundle",
  async fn() {
    const hook = await startWebhook();
    const api = await startKubeApi();
    const kc = api.kubeconfig;
    try {
      const caBundle = btoa(hook.caPem);
      const base = `https://127.0.0.1:${hook.port}`;
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: "meshed", labels: { "mesh-injection": "enabled" } },
        }),
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("MutatingWebhookConfiguration", "inject", { url: `${base}/mutate`, caBundle }, {
          namespaceSelector: { matchLabels: { "mesh-injection": "enabled" } },
        }),
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("ValidatingWebhookConfiguration", "deny", { url: `${base}/validate`, caBundle }),
      );

      await kubectlOk(kc, ["apply", "-f", "-"], pod("web", { app: "web" }, "meshed"));
      const got = parseYaml(await kubectlOk(kc, ["get", "-n", "meshed", "pod", "web", "-o", "yaml"]));
      assert.deepEqual(got.metadata.labels, { app: "web", injected: "true" });
      await kubectlOk(kc, ["apply", "-f", "-"], pod("plain", { app: "plain" }));
      const plain = parseYaml(await kubectlOk(kc, ["get", "pod", "plain", "-o", "yaml"]));
      assert.deepEqual(plain.metadata.labels, { app: "plain" }, "namespaceSelector: default is not labelled");

      const denied = await kubectl(kc, ["apply", "-f", "-"], pod("evil", { bad: "yes" }));
      assert.notEqual(denied.code, 0);
      assert.match(
        denied.stderr,
        /admission webhook "deny\.test" denied the request: spec\.containers\[0\]\.image: bad images are refused/,
      );
      assert.equal((await kubectl(kc, ["get", "pod", "evil"])).code, 1, "a refused pod is not stored");

      const review = hook.reviews.find((r) =>
        isObject(r.request) && (r.request as KubeObject).name === "web"
      )!;
      const req = review.request as KubeObject;
      assert.equal(review.apiVersion, "admission.k8s.io/v1");
      assert.equal(req.operation, "CREATE");
      assert.deepEqual(req.kind, { group: "", version: "v1", kind: "Pod" });
      assert.equal(req.namespace, "meshed");
      assert.equal((req.userInfo as KubeObject).username, "kubernetes-admin");
    } finally {
      await api.stop();
      await hook.close();
    }
  },
}));

Deno.test(requires(kubectlMissing(), {
  name:
    "admission: a service reference resolves through EndpointSlices; a wrong caBundle fails closed, Ignore fails open",
  async fn() {
    const hook = await startWebhook();
    const other = await makeServerPki();
    const api = await startKubeApi();
    const kc = api.kubeconfig;
    try {
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "hook", namespace: "default" },
          spec: { ports: [{ name: "https", port: 443, targetPort: 15017 }] },
        }),
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "discovery.k8s.io/v1",
          kind: "EndpointSlice",
          metadata: {
            name: "hook-1",
            namespace: "default",
            labels: { "kubernetes.io/service-name": "hook" },
          },
          addressType: "IPv4",
          endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
          ports: [{ name: "https", port: hook.port, protocol: "TCP" }],
        }),
      );
      const service = {
        service: { namespace: "default", name: "hook", path: "/validate" },
        caBundle: btoa(hook.caPem),
      };
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("ValidatingWebhookConfiguration", "bysvc", service),
      );
      const denied = await kubectl(kc, ["apply", "-f", "-"], pod("evil", { bad: "yes" }));
      assert.match(denied.stderr, /admission webhook "bysvc\.test" denied the request/);
      await kubectlOk(kc, ["apply", "-f", "-"], pod("fine", { app: "fine" }));

      const wrongCa = { ...service, caBundle: btoa(other.caPem) };
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("ValidatingWebhookConfiguration", "bysvc", wrongCa),
      );
      const refused = await kubectl(kc, ["apply", "-f", "-"], pod("second", { app: "second" }));
      assert.match(
        refused.stderr,
        /Internal error occurred: failed calling webhook "bysvc\.test": failed to call webhook/,
      );
      assert.equal((await kubectl(kc, ["get", "pod", "second"])).code, 1);

      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        webhookConfig("ValidatingWebhookConfiguration", "bysvc", wrongCa, { failurePolicy: "Ignore" }),
      );
      await kubectlOk(kc, ["apply", "-f", "-"], pod("second", { app: "second" }));
    } finally {
      await api.stop();
      await hook.close();
    }
  },
}));
