import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { startKubeApi } from "./mod.ts";
import { settleClientTimers } from "./test_support.ts";

const repo = new URL("../../../", import.meta.url).pathname;

Deno.test("CRDs: the status subresource keeps spec and status apart, generation counts spec changes; Leases conflict on a stale resourceVersion", async () => {
  const api = await startKubeApi();
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfig);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const coord = kc.makeApiClient(k8s.CoordinationV1Api);
    const crd = parseYaml(
      await Deno.readTextFile(`${repo}deploy/crds/authorizationpolicies.security.mesh.io.yaml`),
    );
    const created = await ext.createCustomResourceDefinition({ body: crd });
    assert.ok(created.status?.conditions?.some((c) => c.type === "Established" && c.status === "True"));

    const ref = {
      group: "security.mesh.io",
      version: "v1",
      namespace: "default",
      plural: "authorizationpolicies",
    };
    const body = {
      apiVersion: "security.mesh.io/v1",
      kind: "AuthorizationPolicy",
      metadata: { name: "p" },
      spec: { action: "DENY" },
      status: { ignored: true },
    };
    const p1 = await custom.createNamespacedCustomObject({ ...ref, body });
    assert.equal(p1.status, undefined, "status on create is dropped when the subresource exists");
    assert.equal(p1.metadata.generation, 1);

    const withStatus = await custom.replaceNamespacedCustomObjectStatus({
      ...ref,
      name: "p",
      body: {
        ...p1,
        spec: { action: "ALLOW" },
        status: { validationMessages: [{ level: "ERROR", documentation: "x" }] },
      },
    });
    assert.deepEqual(withStatus.spec, { action: "DENY" }, "a status update does not change spec");
    assert.equal(withStatus.status.validationMessages.length, 1);
    assert.equal(withStatus.metadata.generation, 1);

    const respec = await custom.replaceNamespacedCustomObject({
      ...ref,
      name: "p",
      body: { ...withStatus, spec: { action: "ALLOW" }, status: {} },
    });
    assert.deepEqual(respec.spec, { action: "ALLOW" });
    assert.equal(respec.status.validationMessages.length, 1, "a main update does not change status");
    assert.equal(respec.metadata.generation, 2);

    const lease = await coord.createNamespacedLease({
      namespace: "default",
      body: { metadata: { name: "meshd-leader" }, spec: { holderIdentity: "a", leaseDurationSeconds: 15 } },
    });
    await coord.replaceNamespacedLease({
      namespace: "default",
      name: "meshd-leader",
      body: { ...lease, spec: { ...lease.spec, holderIdentity: "b" } },
    });
    await assert.rejects(
      coord.replaceNamespacedLease({
        namespace: "default",
        name: "meshd-leader",
        body: { ...lease, spec: { ...lease.spec, holderIdentity: "c" } },
      }),
      (e: unknown) => e instanceof k8s.ApiException && e.code === 409,
    );
    await ext.deleteCustomResourceDefinition({ name: "authorizationpolicies.security.mesh.io" });
    await assert.rejects(
      custom.listNamespacedCustomObject(ref),
      (e: unknown) => e instanceof k8s.ApiException && e.code === 404,
    );
  } finally {
    await api.stop();
    await settleClientTimers();
  }
});
