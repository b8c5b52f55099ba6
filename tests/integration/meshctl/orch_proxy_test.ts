/**
 * proxy-config and proxy-stats reach a real proxy's admin port through the orchestrator (pods/
 * portforward of the test API server), as istioctl does, without asking meshd.
 */
import assert from "node:assert/strict";
import {
  freePort,
  liveMeshConfig,
  type LiveMeshd,
  type LiveProxy,
  meshctl,
  startLiveMeshd,
  startLiveProxy,
} from "../../../meshctl/test_support.ts";
import { runningLocalPod, startOrchTestApi } from "./orch_support.ts";

Deno.test("orch proxy: proxy-config and proxy-stats through a port-forward to the pod, meshd unused", async () => {
  const http = freePort();
  const meshd: LiveMeshd = await startLiveMeshd(
    liveMeshConfig({ http, tcp: freePort(), unbound: freePort() }),
  );
  const t = await startOrchTestApi();
  let proxy: LiveProxy | undefined;
  try {
    proxy = await startLiveProxy(meshd, {
      namespace: "foo",
      name: "httpbin-1",
      serviceAccount: "httpbin",
      ip: "10.1.0.2",
      inbound: [http],
    });
    await runningLocalPod(t, "foo", "httpbin-1", ["httpbin", "mesh-proxy"]);
    // meshd's debug address points nowhere: only the orchestrator can find the proxy.
    const env = { MESHCTL_DEBUG_ADDRESS: `127.0.0.1:${freePort()}` };
    const admin = ["--proxy-admin-port", String(proxy.adminPort)];
    const pc = await meshctl(["-c", t.kubeconfig, "proxy-config", "cluster", "httpbin-1", ...admin], { env });
    assert.equal(pc.code, 0, pc.err);
    assert.match(pc.out, /^SERVICE FQDN/m);
    assert.match(pc.out, /inbound/);
    const stats = await meshctl(["-c", t.kubeconfig, "x", "proxy-stats", "httpbin-1.foo", ...admin], { env });
    assert.equal(stats.code, 0, stats.err);
    assert.ok(stats.out.length > 0);
    // The same without the orchestrator goes to meshd, which is not there.
    const viaMeshd = await meshctl(["proxy-config", "cluster", "httpbin-1.foo", ...admin], { env });
    assert.equal(viaMeshd.code, 1);
    const missing = await meshctl(["-c", t.kubeconfig, "proxy-config", "cluster", "nope", ...admin], { env });
    assert.equal(missing.code, 1);
    assert.match(
      missing.err,
      /proxy nope: pod foo\/nope at the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ .*404/,
    );
  } finally {
    await proxy?.stop();
    await t.stop();
    await meshd.stop();
  }
});
