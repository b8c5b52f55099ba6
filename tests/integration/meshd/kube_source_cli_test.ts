/**
 * `meshd discovery --kubeconfig <file>` without `--configDir`, as a real process: it serves, on its
 * debug interface, config made only with kubectl against the test API server (deploy/lab/kube_api).
 *
 * @module
 */
import assert from "node:assert/strict";
import { discovery } from "../../../meshd/cli_test_support.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { cluster, kubectl } from "./kube_support.ts";

Deno.test(requires(commandMissing("kubectl"), {
  name: "meshd discovery --kubeconfig serves config applied with kubectl (/debug/configz)",
  async fn() {
    const api = await cluster();
    try {
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        [
          "apiVersion: security.mesh.io/v1",
          "kind: PeerAuthentication",
          "metadata: {name: default, namespace: foo}",
          "spec: {mtls: {mode: STRICT}}",
          "",
        ].join("\n"),
      );
      const port = freePort();
      const configz = async (): Promise<string> => {
        const response = await within(fetch(`http://127.0.0.1:${port}/debug/configz`), 5000, "configz");
        return await response.text();
      };
      let seen = "";
      const r = await discovery(
        ["--configDir", "", "--kubeconfig", api.kubeconfig, "--httpAddr", `127.0.0.1:${port}`],
        {
          vars: { ENABLE_DEBUG_ON_HTTP: "true" },
          whileReady: async () => {
            assert.match(await configz(), /PeerAuthentication\/foo\/default/);
            // Applied while meshd runs: it appears too.
            await kubectl(
              api.kubeconfig,
              ["apply", "-f", "-"],
              [
                "apiVersion: security.mesh.io/v1",
                "kind: AuthorizationPolicy",
                "metadata: {name: deny-all, namespace: foo}",
                "spec: {}",
                "",
              ].join("\n"),
            );
            const deadline = Date.now() + 5000;
            while (!(seen = await configz()).includes("AuthorizationPolicy/foo/deny-all")) {
              if (Date.now() > deadline) throw new Error(`configz never showed the policy: ${seen}`);
              await new Promise((res) => setTimeout(res, 50));
            }
          },
        },
      );
      assert.equal(r.code, 0, r.err);
      assert.match(
        r.out + r.err,
        /config from the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ \(--kubeconfig /,
      );
      assert.match(seen, /AuthorizationPolicy\/foo\/deny-all/);
    } finally {
      await api.stop();
    }
  },
}));
