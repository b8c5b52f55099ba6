/**
 * meshd's Kubernetes config source when the test API server itself ends every watch
 * (`hub.disconnectAll()`, as an API server restart or its watch timeout does) and holds the new ones
 * (`hub.hold()`, a slow server): an update made while the watches are down is replayed by the resumed
 * watch when its resourceVersion is still in the server's history, and reached by a re-list after a
 * real 410 Gone when it is not; no update is lost either way. kube_source_test.ts breaks the watches
 * on the network instead (a relay cut).
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigStore } from "../../../meshd/config_store/mod.ts";
import { waitFor } from "../../../meshd/config_store/test_support.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { cluster, kubectl, testSource } from "./kube_support.ts";
import { settleClientTimers } from "../../../deploy/lab/kube_api/test_support.ts";

const pa = (name: string, mode: string) =>
  `apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: {name: ${name}, namespace: foo}
spec: {mtls: {mode: ${mode}}}
`;

Deno.test(requires(commandMissing("kubectl"), {
  name: "kube source: watches ended by the server lose no update, resumed in history or re-listed after 410",
  async fn() {
    const api = await cluster({ historySize: 4 });
    const hub = api.server.objects.store.hub;
    const logs: string[] = [];
    const gone: string[] = [];
    const store = new ConfigStore(testSource(api.kubeconfig, logs, gone), {
      logger: { info: () => {}, warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    });
    const mode = (name: string) => {
      const e = store.snapshot().byKey[`PeerAuthentication/foo/${name}`];
      return e?.kind === "PeerAuthentication" ? e.resource.spec.mtls?.mode : undefined;
    };
    try {
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], pa("a", "STRICT"));
      await store.start();
      assert.equal(mode("a"), "STRICT");

      // One change while the watches are down: still in the history, the resumed watch replays it.
      let release = hub.hold();
      hub.disconnectAll();
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], pa("a", "PERMISSIVE"));
      release();
      await waitFor(() => mode("a") === "PERMISSIVE", "the change replayed", { timeoutMs: 10_000 });
      assert.equal(gone.length, 0, `410 Gone within the history: ${gone} ${logs.join("\n")}`);

      // More changes than the history holds: the resumed watch gets 410 Gone and the informer re-lists.
      release = hub.hold();
      hub.disconnectAll();
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], pa("a", "DISABLE"));
      for (let i = 0; i < 5; i++) await kubectl(api.kubeconfig, ["apply", "-f", "-"], pa(`n${i}`, "STRICT"));
      release();
      await waitFor(
        () => mode("a") === "DISABLE" && mode("n4") === "STRICT",
        "the re-list after 410",
        { timeoutMs: 10_000 },
      );
      assert.ok(gone.includes("PeerAuthentication"), logs.join("\n"));
      // The watch after the re-list carries on: a later change arrives too.
      await kubectl(api.kubeconfig, ["delete", "peerauthentications.security.mesh.io", "n0", "-n", "foo"]);
      await waitFor(() => mode("n0") === undefined, "the delete after the re-list", { timeoutMs: 10_000 });
    } finally {
      await store.stop();
      await api.stop();
      // client-node's undici timers of the last requests (deploy/lab/kube_api/README.md).
      await settleClientTimers();
    }
  },
}));
