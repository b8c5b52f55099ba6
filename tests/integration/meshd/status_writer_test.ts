/**
 * meshd's status writer (meshd/kube_source/status_writer.ts) fed by the Kubernetes config source,
 * against the test API server: it writes only while started (leading), only what differs, at most at
 * DISCO_STATUS_QPS, and stops at once.
 */
import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import { ApiClient, type ApiRequest } from "../../../meshd/kube_source/api_client.ts";
import { KubeSource } from "../../../meshd/kube_source/mod.ts";
import { StatusWriter } from "../../../meshd/kube_source/status_writer.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { cluster, kubectl } from "./kube_support.ts";

const policy = (name: string, action: string) =>
  `apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: foo}
spec: {action: ${action}, rules: [{}]}
`;

async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test(requires(commandMissing("kubectl"), {
  name: "status writer: writes only while started, only what differs, at most DISCO_STATUS_QPS",
  async fn() {
    const api = await cluster();
    const config = new KubeConfig();
    config.loadFromFile(api.kubeconfig);
    const client = new ApiClient(config);
    const patches: { path: string; at: number }[] = [];
    const counting = {
      json<T>(method: string, path: string, req?: ApiRequest): Promise<T> {
        if (method === "PATCH") patches.push({ path, at: performance.now() });
        return client.json<T>(method, path, req);
      },
    };
    const source = new KubeSource({ config, api: client, description: "test", coalesceMs: 5 });
    const writer = new StatusWriter({
      api: counting,
      log: { info: () => {}, warn: () => {} },
      rateLimit: { qps: 2, burst: 1 },
    });
    const unsubscribe = source.onValidated((items) => writer.update(items));
    try {
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        ["a", "b", "c"].map((n) => policy(n, "MAYBE")).join("---\n"),
      );
      await source.start(() => {});
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(patches.length, 0, "not started (not the leader): nothing written");

      writer.start();
      await until(() => patches.length === 3, 5000, "three status writes");
      const spread = patches[2].at - patches[0].at;
      assert.ok(spread >= 900, `3 writes at 2 a second (burst 1) took ${spread.toFixed(0)} ms`);
      const yaml = await kubectl(api.kubeconfig, [
        "get",
        "authorizationpolicy",
        "c",
        "-n",
        "foo",
        "-o",
        "yaml",
      ]);
      assert.match(yaml, /field: spec\.action/);
      // The writes came back through the watch and match: nothing is written again.
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(patches.length, 3);

      // A label change re-validates to the same messages: no write. A fix clears them: one write.
      await kubectl(api.kubeconfig, ["label", "authorizationpolicy", "a", "-n", "foo", "x=y"]);
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], policy("b", "DENY"));
      await until(
        async () =>
          !/validationMessages/.test(
            await kubectl(api.kubeconfig, ["get", "authorizationpolicy", "b", "-n", "foo", "-o", "yaml"]),
          ),
        5000,
        "b's messages cleared",
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(patches.slice(3).map((p) => p.path), [
        "/apis/security.mesh.io/v1/namespaces/foo/authorizationpolicies/b/status",
      ]);

      // Stopped (leadership lost): a new invalid object gets nothing.
      writer.stop();
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], policy("d", "MAYBE"));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(patches.length, 4);
      // Started again (leadership regained): every object is checked, d is written.
      writer.start();
      await until(() => patches.length === 5, 5000, "d written after a new start");
      assert.match(patches[4].path, /authorizationpolicies\/d\/status$/);
    } finally {
      writer.stop();
      unsubscribe();
      await source.stop();
      await client.close();
      await api.stop();
    }
  },
}));
