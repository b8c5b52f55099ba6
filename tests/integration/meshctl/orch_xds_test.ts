/**
 * meshctl reaches meshd over xDS with the orchestrator's credentials (issue 15, item 1b): a token from
 * the TokenRequest API (checked by meshd with TokenReview), meshd's root from ConfigMap
 * mesh-ca-root-cert, and `--xds-label` port-forwarding to meshd's pod; a real meshd on the test API server.
 */
import assert from "node:assert/strict";
import { debugText, kubeMeshd, MESHD_NS, withKube } from "../meshd/ca_kube_support.ts";
import { meshctl } from "../../../meshctl/test_support.ts";

Deno.test("orch xds: --xds-address and --xds-label get a TokenRequest token and meshd's root through the orchestrator", async () => {
  await withKube([], [`${MESHD_NS}/default`], async ({ kube, api }) => {
    const run = await kubeMeshd(kube.kubeconfig, async (ports) => {
      const secure = `127.0.0.1:${ports.secure}`;
      const env = { KUBECONFIG: kube.kubeconfig };
      // No root published yet: the error says where meshctl looked and what to give instead.
      const noRoot = await meshctl(["proxy-status", "--xds-address", secure], { env });
      assert.equal(noRoot.code, 1, noRoot.out);
      assert.match(noRoot.err, /configmaps\/mesh-ca-root-cert: 404 .*give --cert-dir or --insecure/);

      await api.json("POST", `/api/v1/namespaces/${MESHD_NS}/configmaps`, {
        body: {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "mesh-ca-root-cert", namespace: MESHD_NS },
          data: { "root-cert.pem": await debugText(ports, "/debug/rootCert") },
        },
      });
      const ok = await meshctl(["proxy-status", "--xds-address", secure, "--authority", "localhost"], {
        env,
      });
      assert.equal(ok.code, 0, ok.err);
      assert.equal(ok.out, `no proxy is connected to meshd at ${secure}\n`);
      // The control: the same request without the orchestrator's token is refused.
      const anonymous = await meshctl(["proxy-status", "--xds-address", secure, "--insecure"]);
      assert.equal(anonymous.code, 1);
      assert.match(anonymous.err, /UNAUTHENTICATED: authentication required/);

      // The same through -c, and through --xds-label: the meshd pod's IP at --xds-port.
      const pods = `/api/v1/namespaces/${MESHD_NS}/pods`;
      await api.json("POST", pods, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "meshd-1", namespace: MESHD_NS, labels: { app: "meshd" } },
          spec: { containers: [{ name: "discovery", image: "meshd" }] },
        },
      });
      await api.json("PUT", `${pods}/meshd-1/status`, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "meshd-1", namespace: MESHD_NS },
          status: { phase: "Running", podIP: "127.0.0.1" },
        },
      });
      const byLabel = await meshctl([
        "-c",
        kube.kubeconfig,
        "proxy-status",
        "--xds-label",
        "app=meshd",
        "--xds-port",
        String(ports.secure),
        "--authority",
        "localhost",
      ]);
      assert.equal(byLabel.code, 0, byLabel.err);
      // Through a local port-forward, not meshd's own port.
      const via = /no proxy is connected to meshd at 127\.0\.0\.1:(\d+)/.exec(byLabel.out);
      assert.ok(via && Number(via[1]) !== ports.secure, byLabel.out);
      const none = await meshctl(["-c", kube.kubeconfig, "proxy-status", "--xds-label", "app=nope"]);
      assert.equal(none.code, 1);
      assert.match(
        none.err,
        /--xds-label app=nope: no meshd pod with an IP in namespace mesh-system \(0 matched\)/,
      );

      // Without the service account, the TokenRequest fails and says for whom.
      await api.json("DELETE", `/api/v1/namespaces/${MESHD_NS}/serviceaccounts/default`);
      const noSa = await meshctl(["proxy-status", "--xds-address", secure], { env });
      assert.equal(noSa.code, 1);
      assert.match(noSa.err, /token for meshd \(service account mesh-system\/default, audience mesh-ca\)/);
    });
    assert.equal(run.code, 0, run.err);
  });
});
