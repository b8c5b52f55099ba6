/**
 * The real `proxy` program (a subprocess, started by an in-process meshd and CA) with the status
 * listener and the probers the injector gives it (`--statusPort`, ISTIO_KUBE_APP_PROBERS), in front of
 * the real httpbin (Debian's python3-httpbin under gunicorn), under a STRICT PeerAuthentication: the
 * kubelet's original plain-text probe to the inbound port is reset (what the rewrite is for), while
 * /app-health/app/livez and readyz follow httpbin's /status/200 and /status/500 (real curl), an unknown
 * probe is 404, /healthz/ready is 200 once LIVE.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd } from "../meshd_support.ts";
import { curl, Httpbin } from "../../../proxy/inbound/test_support.ts";
import { STRICT } from "../../../meshd/server/test_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { httpbinMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";

const CONFIG = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: app-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: app}, serviceAccount: app}
`;

Deno.test(requires(httpbinMissing(), {
  name: "proxy --statusPort: /app-health/app/livez|readyz follow httpbin's /status/200 and /status/500",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "proxy-app-health-" });
    await Deno.mkdir(join(dir, "config"));
    await Deno.writeTextFile(join(dir, "config", "workloads.yaml"), CONFIG);
    await Deno.writeTextFile(join(dir, "config", "strict.yaml"), STRICT);
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(join(dir, "config"), { ca });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const httpbin = await Httpbin.start();
    const statusPort = freePort();
    const inboundPort = freePort();
    let proxy: ProxyProcess | undefined;
    try {
      proxy = await startProxyProcess({
        dir,
        ca,
        discoveryAddress: `127.0.0.1:${meshd.securePort}`,
        namespace: "foo",
        serviceAccount: "app",
        workloadEntry: "app-1",
        address: "10.1.0.2",
        args: [
          "--inboundBindAddress=127.0.0.1",
          `--inbound=${inboundPort}=127.0.0.1:${httpbin.port}`,
          `--statusPort=${statusPort}`,
        ],
        env: {
          ISTIO_KUBE_APP_PROBERS: JSON.stringify({
            "/app-health/app/livez": {
              httpGet: { path: "/status/200", port: httpbin.port },
              timeoutSeconds: 5,
            },
            "/app-health/app/readyz": {
              httpGet: { path: "/status/500", port: httpbin.port },
              timeoutSeconds: 5,
            },
          }),
        },
      });
      // What the kubelet would send without the rewrite: plain text to the application's port, reset.
      const original = await curl([
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        `http://127.0.0.1:${inboundPort}/status/200`,
      ]);
      assert.deepEqual([original.code, original.stdout], [56, "000"]);
      const get = async (path: string) => {
        const r = await curl(["-w", "\n%{http_code}", `http://127.0.0.1:${statusPort}${path}`]);
        const lines = r.stdout.split("\n");
        return { status: Number(lines.pop()), body: lines.join("\n") };
      };
      assert.deepEqual(await get("/app-health/app/livez"), {
        status: 200,
        body: "the application answered 200\n",
      });
      assert.deepEqual(await get("/app-health/app/readyz"), {
        status: 500,
        body: "the application answered 500\n",
      });
      assert.equal((await get("/app-health/app/startupz")).status, 404);
      assert.equal((await get("/healthz/ready")).status, 200);
    } finally {
      await proxy?.stop();
      await httpbin.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
