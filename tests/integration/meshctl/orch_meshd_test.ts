/**
 * proxy-status, version, internal-debug and x authz reach meshd's debug interface through the orchestrator
 * (issue 15, item 1), as istioctl reaches istiod: a port-forward (the test API server's pods/portforward)
 * to the running pod labelled app=meshd in -i's namespace, at its --httpAddr port; a real meshd.
 */
import assert from "node:assert/strict";
import { kubeMeshd, MESHD_NS, withKube } from "../meshd/ca_kube_support.ts";
import { freePort, meshctl } from "../../../meshctl/test_support.ts";

Deno.test("orch meshd: -c reads meshd through a port-forward to its pod, and says when there is none", async () => {
  await withKube([], [], async ({ kube, api }) => {
    const run = await kubeMeshd(kube.kubeconfig, async (ports) => {
      const c = ["-c", kube.kubeconfig];
      // meshd's debug port is not where --debug-address points: only the orchestrator finds it.
      const env = { KUBECONFIG: "" };
      const none = await meshctl([...c, "proxy-status"], { env });
      assert.equal(none.code, 1);
      assert.match(
        none.err,
        /no running meshd pod with label app=meshd in namespace mesh-system at the Kubernetes API at https:/,
      );
      const noVersion = await meshctl([...c, "version", "--short=false"], { env });
      assert.equal(noVersion.code, 0, noVersion.err);
      assert.match(
        noVersion.err,
        /control plane version unavailable: no running meshd pod with label app=meshd/,
      );
      assert.doesNotMatch(noVersion.out, /meshd version/);

      const pods = `/api/v1/namespaces/${MESHD_NS}/pods`;
      const pod = (name: string, labels: Record<string, string>, httpAddr: string) =>
        api.json("POST", pods, {
          body: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: MESHD_NS, labels },
            spec: {
              containers: [{
                name: "discovery",
                image: "meshd",
                args: ["discovery", `--httpAddr=${httpAddr}`],
              }],
            },
          },
        });
      const running = (name: string) =>
        api.json("PUT", `${pods}/${name}/status`, {
          body: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: MESHD_NS },
            status: { phase: "Running", podIP: "127.0.0.1" },
          },
        });
      // Another app's pod, and a meshd pod not yet running, are not chosen.
      await pod("other", { app: "other" }, `127.0.0.1:${ports.http}`);
      await running("other");
      await pod("meshd-pending", { app: "meshd" }, `127.0.0.1:${ports.http}`);
      const pending = await meshctl([...c, "proxy-status"], { env });
      assert.equal(pending.code, 1);
      assert.match(pending.err, /no running meshd pod with label app=meshd in namespace mesh-system/);

      await pod("meshd-1", { app: "meshd" }, `127.0.0.1:${ports.http}`);
      await running("meshd-1");
      const status = await meshctl([...c, "proxy-status"], { env });
      assert.equal(status.code, 0, status.err);
      // Through a local forward, not meshd's own port.
      const via = /^no proxy is connected to meshd at 127\.0\.0\.1:(\d+)\n$/.exec(status.out);
      assert.ok(via && Number(via[1]) !== ports.http, status.out);

      const version = await meshctl([...c, "version", "--short=false"], { env });
      assert.equal(version.code, 0, version.err);
      assert.match(version.out, /^meshd version: /m);
      const debug = await meshctl([...c, "x", "internal-debug", "syncz"], { env });
      assert.equal(debug.code, 0, debug.err);
      assert.equal(JSON.parse(debug.out).length, 0);
      const authz = await meshctl([...c, "x", "authz", "check", "-l", "app=httpbin", "-n", "foo"], { env });
      assert.equal(authz.code, 0, authz.err);

      // A named --debug-address wins over the orchestrator (nothing listens there).
      const named = await meshctl([...c, "proxy-status", "--debug-address", `127.0.0.1:${freePort()}`], {
        env,
      });
      assert.equal(named.code, 1);
      assert.match(named.err, /cannot reach meshd's debug interface \(--debug-address\)/);

      // A pod whose --httpAddr port has nothing listening: the error names the pod and the likely cause.
      await api.json("DELETE", `${pods}/meshd-1`);
      await pod("meshd-2", { app: "meshd" }, `127.0.0.1:${freePort()}`);
      await running("meshd-2");
      const closed = await meshctl([...c, "proxy-status"], { env });
      assert.equal(closed.code, 1);
      assert.match(
        closed.err,
        /port-forward to pod mesh-system\/meshd-2:\d+ through .*ENABLE_DEBUG_ON_HTTP=true/,
      );
    });
    assert.equal(run.code, 0, run.err);
  });
});
