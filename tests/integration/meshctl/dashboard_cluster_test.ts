import assert from "node:assert/strict";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { kubectlMissing, startTestCluster, type TestCluster } from "./cluster_support.ts";

const MAIN = new URL("../../../meshctl/main.ts", import.meta.url).pathname;

const OBJECTS = `apiVersion: v1
kind: Namespace
metadata: {name: mesh-system}
---
apiVersion: v1
kind: Pod
metadata: {name: meshd-0, namespace: mesh-system, labels: {app: meshd}}
spec: {containers: [{name: discovery, image: mesh/meshd:test}]}
`;

const PROMETHEUS = `apiVersion: v1
kind: Service
metadata: {name: prometheus, namespace: mesh-system}
spec: {selector: {app: prometheus}, ports: [{name: http, port: 9090}]}
---
apiVersion: v1
kind: Pod
metadata: {name: prometheus-0, namespace: mesh-system, labels: {app: prometheus}}
spec: {containers: [{name: prometheus, image: prom/prometheus}]}
`;

/** Sets a pod's IP as a kubelet would: the test API server's pods/portforward stand-in connects to it. */
async function setPodIp(c: TestCluster, name: string, ip: string): Promise<void> {
  await kubectlOk(c.api.kubeconfig, [
    "-n",
    "mesh-system",
    "patch",
    "pod",
    name,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status: { podIP: ip, phase: "Running" } }),
  ]);
}

/** Runs a forwarding dashboard command, fetches its URL, stops it with SIGTERM; returns body and exit code. */
async function throughDashboard(
  c: TestCluster,
  args: string[],
): Promise<{ body: string; code: number; err: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "-c", c.api.kubeconfig, ...args, "--browser=false", "--address", "127.0.0.1"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { KUBECONFIG: "" },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const errText = new Response(child.stderr).text();
  try {
    const first = await within(reader.read(), 30_000, `${args.join(" ")} prints its URL`);
    const url = (first.value ?? "").trim();
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const body = await within(fetch(url).then((r) => r.text()), 10_000, `GET ${url}`);
    child.kill("SIGTERM");
    const status = await within(child.status, 10_000, "meshctl ends on SIGTERM");
    await reader.cancel();
    return { body, code: status.code, err: await errText };
  } catch (e) {
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    await errText;
    throw e;
  }
}

Deno.test(requires(kubectlMissing(), {
  name: "dashboard controlz|meshd-debug|metrics-ui: a local port relays to the pod; a missing add-on says so",
  async fn() {
    const c = await startTestCluster();
    const ui = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => new Response(`ui ${new URL(req.url).pathname}`),
    );
    try {
      await c.apply(OBJECTS);
      const port = String(ui.addr.port);
      await setPodIp(c, "meshd-0", "127.0.0.1");

      const ctrlz = await throughDashboard(c, [
        "dashboard",
        "controlz",
        "meshd-0.mesh-system",
        "--ctrlz_port",
        port,
      ]);
      assert.equal(ctrlz.body, "ui /");
      assert.equal(ctrlz.code, 0, ctrlz.err);
      assert.match(
        ctrlz.err,
        /forwarding 127\.0\.0\.1:\d+ to meshd-0\.mesh-system:\d+ through pods\/portforward/,
      );

      const missing = await c.meshctl(["dashboard", "metrics-ui", "--browser=false"]);
      assert.equal(missing.code, 1);
      assert.match(
        missing.err,
        /Prometheus is not installed: no Service prometheus in namespace mesh-system/,
      );

      await c.apply(PROMETHEUS);
      await setPodIp(c, "prometheus-0", "127.0.0.1");
      const prom = await throughDashboard(c, ["d", "metrics-ui", "--ui-port", port]);
      assert.equal(prom.body, "ui /");

      const debug = await c.meshctl(["dashboard", "meshd-debug", "-l", "app=none", "--browser=false"]);
      assert.match(debug.err, /no pod matches app=none in namespace default/);
    } finally {
      await ui.shutdown();
      await c.stop();
    }
  },
}));
