import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { startKubeApi } from "./mod.ts";
import { settleClientTimers, until } from "./test_support.ts";

function clients(kubeconfig: string): { kc: k8s.KubeConfig; core: k8s.CoreV1Api } {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

function configMap(name: string, labels: Record<string, string> = {}): k8s.V1ConfigMap {
  return { metadata: { name, labels }, data: { k: name } };
}

Deno.test("client-node: create, list with a label selector, read, replace with a stale resourceVersion is refused", async () => {
  const api = await startKubeApi();
  try {
    const { core } = clients(api.kubeconfig);
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("a", { app: "x" }) });
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("b", { app: "y" }) });
    const list = await core.listNamespacedConfigMap({ namespace: "default", labelSelector: "app!=y" });
    assert.deepEqual(list.items.map((c) => c.metadata?.name), ["a"]);
    assert.match(list.metadata?.resourceVersion ?? "", /^\d+$/);
    const a = await core.readNamespacedConfigMap({ namespace: "default", name: "a" });
    await core.replaceNamespacedConfigMap({
      namespace: "default",
      name: "a",
      body: { ...a, data: { k: "new" } },
    });
    await assert.rejects(
      core.replaceNamespacedConfigMap({
        namespace: "default",
        name: "a",
        body: { ...a, data: { k: "stale" } },
      }),
      (e: unknown) => e instanceof k8s.ApiException && e.code === 409,
    );
    const ns = await core.listNamespace();
    assert.ok(ns.items.some((n) => n.metadata?.name === "kube-system"));
  } finally {
    await api.stop();
    await settleClientTimers();
  }
});

Deno.test("client-node: an informer sees add, update and delete, and re-lists after 410 Gone without losing an update", async () => {
  const api = await startKubeApi({ historySize: 5 });
  try {
    const { kc, core } = clients(api.kubeconfig);
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("first") });
    let lists = 0;
    const informer = k8s.makeInformer(
      kc,
      "/api/v1/namespaces/default/configmaps",
      () => {
        lists++;
        return core.listNamespacedConfigMap({ namespace: "default" });
      },
    );
    const seen: string[] = [];
    let errors = 0;
    informer.on("add", (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on("update", (o) => seen.push(`update ${o.metadata?.name} ${o.data?.k}`));
    informer.on("delete", (o) => seen.push(`delete ${o.metadata?.name}`));
    informer.on("error", () => errors++);
    await informer.start();
    await until(() => seen.includes("add first"), 5000, "informer add of the listed object");
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("second") });
    await until(() => seen.includes("add second"), 5000, "watch ADDED");
    await core.patchNamespacedConfigMap(
      { namespace: "default", name: "second", body: { data: { k: "v2" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await until(() => seen.includes("update second v2"), 5000, "watch MODIFIED");

    // Break every watch, then write more events than the history keeps: the informer's resume
    // from its last resourceVersion must get 410 Gone and re-list, and still see the last update.
    const reconnects = seen.length;
    const release = api.server.objects.store.hub.hold();
    api.server.objects.store.hub.disconnectAll();
    for (let i = 0; i < 8; i++) {
      await core.createNamespacedConfigMap({ namespace: "default", body: configMap(`n${i}`) });
    }
    await core.patchNamespacedConfigMap(
      { namespace: "default", name: "first", body: { data: { k: "after-410" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedConfigMap({ namespace: "default", name: "second" });
    release();
    await until(
      () => informer.list().some((o) => o.metadata?.name === "first" && o.data?.k === "after-410"),
      10_000,
      "the informer's cache holds the update made while its watch was gone",
    );
    await until(
      () => !informer.list().some((o) => o.metadata?.name === "second"),
      10_000,
      "deleted while gone",
    );
    assert.equal(informer.list().filter((o) => /^n\d$/.test(o.metadata?.name ?? "")).length, 8);
    assert.ok(seen.length > reconnects);
    assert.equal(lists, 2, "one list at start, one re-list after the 410");
    await informer.stop();
  } finally {
    await api.stop();
    await settleClientTimers();
  }
});
