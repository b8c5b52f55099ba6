import assert from "node:assert/strict";
import { startKubeApi } from "./mod.ts";
import { ApiError, type KubeObject } from "./types.ts";

const USER = { username: "test", groups: [] };

Deno.test("objects: of two concurrent creates or conditional updates of one Lease exactly one wins (leader election)", async () => {
  const api = await startKubeApi();
  try {
    const objects = api.server.objects;
    const lease = objects.registry.find("coordination.k8s.io", "v1", "leases")!;
    const body = (holder: string): KubeObject => ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "leader" },
      spec: { holderIdentity: holder },
    });
    const created = await Promise.allSettled([
      objects.create(lease, "default", body("a"), USER),
      objects.create(lease, "default", body("b"), USER),
    ]);
    assert.deepEqual(created.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
    const lost = created.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.ok(
      lost.reason instanceof ApiError && lost.reason.code === 409 && lost.reason.reason === "AlreadyExists",
    );

    const current = objects.get(lease, "default", "leader");
    const take = (holder: string): KubeObject => ({
      ...structuredClone(current),
      spec: { holderIdentity: holder },
    });
    const updated = await Promise.allSettled([
      objects.update(lease, "default", "leader", take("c"), USER),
      objects.update(lease, "default", "leader", take("d"), USER),
    ]);
    assert.deepEqual(updated.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
    const loser = updated.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.ok(loser.reason instanceof ApiError && loser.reason.reason === "Conflict");
  } finally {
    await api.stop();
  }
});
