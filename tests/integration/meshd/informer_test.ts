/**
 * meshd's informer (meshd/kube_source/informer.ts) against the test API server: a type that is not
 * served counts as listed (its CRD may come later) and is retried with backoff, each failure reported
 * (controller_sync_errors_total); a served type delivers its objects and then the watch's events.
 *
 * @module
 */
import assert from "node:assert/strict";
import { loadKubeConfig } from "../../../meshd/kube_source/kube_config.ts";
import { ApiClient } from "../../../meshd/kube_source/api_client.ts";
import { Informer, type InformerEvent } from "../../../meshd/kube_source/informer.ts";
import { waitFor } from "../../../meshd/config_store/test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { cluster, kubectl } from "./kube_support.ts";

Deno.test(requires(commandMissing("kubectl"), {
  name:
    "informer: a type not served is synced and retried with each failure reported; a served one follows events",
  async fn() {
    const api = await cluster();
    const choice = loadKubeConfig(api.kubeconfig, {});
    if (!choice.ok) throw new Error(choice.reason);
    const client = new ApiClient(choice.config);
    const failures: (number | undefined)[] = [];
    const logs: string[] = [];
    const events: string[] = [];
    const missing = new Informer({
      config: choice.config,
      api: client,
      path: "/apis/nothere.example.com/v1/widgets",
      label: "Widget",
      retryMs: 20,
      optional: true,
      logger: { info: (m) => logs.push(`info: ${m}`), warn: (m) => logs.push(`warn: ${m}`), error: () => {} },
      onEvent: () => {},
      onFailure: (status) => failures.push(status),
    });
    const pods = new Informer({
      config: choice.config,
      api: client,
      path: "/api/v1/namespaces/foo/pods",
      label: "Pod",
      onEvent: (event: InformerEvent, obj) => events.push(`${event} ${obj.metadata?.name}`),
    });
    try {
      missing.start();
      await within(missing.synced, 5000, "the missing type synced");
      await waitFor(() => failures.length >= 3, "three retries");
      assert.deepEqual(new Set(failures), new Set([404]));
      assert.equal(logs.length, 1, `a failure repeating is logged once: ${logs.join("\n")}`);
      assert.match(logs[0], /^info: Widget: not served \(404\)/);

      await kubectl(api.kubeconfig, ["run", "a", "-n", "foo", "--image", "x"]);
      pods.start();
      await within(pods.synced, 5000, "pods listed");
      assert.deepEqual(pods.list().map((p) => p.metadata?.name), ["a"]);
      await kubectl(api.kubeconfig, ["label", "pod", "a", "-n", "foo", "v=2"]);
      await kubectl(api.kubeconfig, ["delete", "pod", "a", "-n", "foo", "--wait=false"]);
      await waitFor(() => events.includes("delete a"), "the deletion");
      assert.deepEqual(events, ["add a", "update a", "delete a"]);
    } finally {
      await missing.stop();
      await pods.stop();
      await client.close();
      await api.stop();
    }
  },
}));
