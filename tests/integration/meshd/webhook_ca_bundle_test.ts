/**
 * The caBundle patch (meshd/webhooks/ca_bundle.ts) against the test Kubernetes API server
 * (deploy/lab/kube_api): the webhook configurations get the mesh root, the API server's copy then
 * verifies meshd's webhook certificate, a lost race (409) is retried, a missing configuration is
 * reported.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import type { JsonObject } from "../../../meshd/webhooks/admission.ts";
import { configPath, patchCaBundle, type WebhookConfigApi } from "../../../meshd/webhooks/ca_bundle.ts";
import { restApi, startTestWebhooks } from "./webhook_support.ts";
import { startCaBundlePatcher } from "../../../meshd/webhooks/ca_bundle_patcher.ts";
import { admissionReview, httpbinPod, POD_KIND } from "../../../meshd/webhooks/test_support.ts";
import { startCa, tempDir } from "../../../meshd/ca/test_support.ts";

const INJECTOR = {
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "MutatingWebhookConfiguration",
  metadata: { name: "mesh-sidecar-injector" },
  webhooks: ["namespace.sidecar-injector.mesh.io", "object.sidecar-injector.mesh.io"].map((name) => ({
    name,
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    clientConfig: { service: { name: "meshd", namespace: "mesh-system", path: "/inject", port: 15017 } },
    rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"] }],
  })),
};

Deno.test("caBundle: both webhooks get the mesh root, which then verifies meshd's webhook server", async () => {
  const api = await startKubeApi();
  const { dir, cleanup } = await tempDir();
  const ca = await startCa(dir);
  const http = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  const hooks = await startTestWebhooks(ca, dir);
  try {
    const rest = restApi(api, http);
    const ref = { kind: "mutating" as const, name: "mesh-sidecar-injector" };
    assert.equal(await patchCaBundle(rest, ref, ca.trustBundlePem), "missing");
    assert.equal(
      await rest.post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", INJECTOR),
      201,
    );
    const attempts: boolean[] = [];
    assert.equal(
      await patchCaBundle(rest, ref, ca.trustBundlePem, (retry) => attempts.push(retry)),
      "patched",
    );
    assert.deepEqual(attempts, [false]);
    assert.equal(await patchCaBundle(rest, ref, ca.trustBundlePem), "unchanged");
    const stored = (await rest.get(configPath(ref)))!;
    const bundles = (stored.webhooks as JsonObject[]).map((w) =>
      (w.clientConfig as JsonObject).caBundle as string
    );
    assert.equal(bundles.length, 2);
    for (const b of bundles) assert.equal(Buffer.from(b, "base64").toString(), ca.trustBundlePem);
    // As the API server will: trust exactly the stored caBundle and post an AdmissionReview.
    const asApiServer = Deno.createHttpClient({ caCerts: [Buffer.from(bundles[0], "base64").toString()] });
    try {
      const res = await fetch(`https://localhost:${hooks.port}/inject`, {
        method: "POST",
        client: asApiServer,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(admissionReview(httpbinPod(), POD_KIND)),
      });
      assert.equal((await res.json()).response.patchType, "JSONPatch");
    } finally {
      asApiServer.close();
    }
    // A root rotation: the old caBundle is replaced.
    await ca.rotateRoot(24 * 3_600_000);
    assert.equal(await patchCaBundle(rest, ref, ca.trustBundlePem), "patched");
  } finally {
    http.close();
    await hooks.stop();
    await ca.stop();
    await cleanup();
    await api.stop();
  }
});

Deno.test("caBundle: a write that lost a race (409) is read and written again", async () => {
  const api = await startKubeApi();
  const http = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  try {
    const rest = restApi(api, http);
    const validator = {
      ...INJECTOR,
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "mesh-mesh-system" },
    };
    assert.equal(
      await rest.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", validator),
      201,
    );
    const ref = { kind: "validating" as const, name: "mesh-mesh-system" };
    let raced = false;
    const racing: WebhookConfigApi = {
      get: (p) => rest.get(p),
      async put(p, body) {
        if (!raced) {
          // Someone else updates the object between our read and our write.
          raced = true;
          const other = (await rest.get(p))!;
          (other.metadata as JsonObject).labels = { touched: "yes" };
          assert.equal(await rest.put(p, other), 200);
        }
        return await rest.put(p, body);
      },
    };
    const attempts: boolean[] = [];
    assert.equal(
      await patchCaBundle(racing, ref, "-----BEGIN CERTIFICATE-----\n", (r) => attempts.push(r)),
      "patched",
    );
    assert.deepEqual(attempts, [false, true]);
    const stored = (await rest.get(configPath(ref)))!;
    assert.deepEqual(
      (stored.metadata as JsonObject).labels,
      { touched: "yes" },
      "the other writer's change was kept",
    );
  } finally {
    http.close();
    await api.stop();
  }
});

Deno.test("caBundle patcher: a configuration created after start is patched at the recheck, and again after a root rotation", async () => {
  const api = await startKubeApi();
  const { dir, cleanup } = await tempDir();
  const ca = await startCa(dir);
  const http = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  const counts = { attempts: 0, retries: 0, failures: 0 };
  const lines: string[] = [];
  const rest = restApi(api, http);
  const patcher = startCaBundlePatcher({
    api: rest,
    injectionName: "mesh-sidecar-injector",
    validationName: "",
    trustBundlePem: () => ca.trustBundlePem,
    onBundleChange: (l) => ca.onBundleChange(l),
    counters: {
      attempts: () => counts.attempts++,
      retries: () => counts.retries++,
      failures: () => counts.failures++,
    },
    log: { info: (m) => lines.push(m), warn: (m) => lines.push(m) },
    recheckMs: 100,
  });
  const ref = { kind: "mutating" as const, name: "mesh-sidecar-injector" };
  const bundle = async () =>
    Buffer.from(
      (((await rest.get(configPath(ref)))!.webhooks as JsonObject[])[0].clientConfig as JsonObject)
        .caBundle as string ?? "",
      "base64",
    ).toString();
  const until = async (cond: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 5000;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`${what} within 5 s; log: ${lines.join(" | ")}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  try {
    await patcher.run();
    assert.match(
      lines.join("\n"),
      /mutating webhook configuration mesh-sidecar-injector does not exist \(yet\)/,
    );
    assert.equal(
      await rest.post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", INJECTOR),
      201,
    );
    await until(async () => (await bundle()) === ca.trustBundlePem, "the caBundle was not set");
    const before = ca.trustBundlePem;
    await ca.rotateRoot(24 * 3_600_000);
    assert.notEqual(ca.trustBundlePem, before);
    await until(
      async () => (await bundle()) === ca.trustBundlePem,
      "the caBundle did not follow the rotation",
    );
    assert.deepEqual([counts.attempts >= 2, counts.failures], [true, 0]);
  } finally {
    patcher.stop();
    http.close();
    await ca.stop();
    await cleanup();
    await api.stop();
  }
});
