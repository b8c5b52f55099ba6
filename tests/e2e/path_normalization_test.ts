/**
 * End to end: `meshConfig.pathNormalization` read by the real meshd from `--meshConfig`, pushed to a
 * real proxy in its Workload, applied on the proxy's inbound listener (raw bytes against a DENY on
 * /headers, the application echoing what it received) and shown by `meshctl proxy-config listener`.
 * MERGE_SLASHES is chosen because it differs from the default (DECODE_AND_MERGE_SLASHES) on
 * `/%2Fheaders`: that request reaching the application proves the mesh's setting is in force.
 * `meshctl x authz explain` must give the proxy's verdict, from its config dump and from meshd.
 */
import assert from "node:assert/strict";
import {
  freePort,
  type LiveMeshd,
  type LiveProxy,
  meshctl,
  startLiveMeshd,
  startLiveProxy,
} from "../../meshctl/test_support.ts";
import { parseEcho, sendRaw, TargetEcho } from "../../proxy/inbound/target_echo.ts";

const PORT = freePort();

const CONFIG = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: ${PORT}, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  mtls: {mode: PERMISSIVE}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-headers, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules: [{to: [{operation: {paths: [/headers]}}]}, {to: [{operation: {methods: [DELETE]}}]}]
`;

const get = (target: string, method = "GET") =>
  `${method} ${target} HTTP/1.1\r\nHost: httpbin.foo:8000\r\nConnection: close\r\n\r\n`;

Deno.test("meshConfig pathNormalization MERGE_SLASHES: meshd pushes it, the proxy applies it, meshctl shows it", async () => {
  const echo = await TargetEcho.start();
  let meshd: LiveMeshd | undefined;
  let proxy: LiveProxy | undefined;
  try {
    meshd = await startLiveMeshd(CONFIG, {
      meshConfig: "pathNormalization:\n  normalization: MERGE_SLASHES\n",
    });
    proxy = await startLiveProxy(meshd, {
      namespace: "foo",
      name: "httpbin-1",
      serviceAccount: "httpbin",
      ip: "10.1.0.2",
      inbound: [PORT],
      app: echo.port,
    });
    // The policy arrives with the workload; wait until it is in force.
    const deadline = Date.now() + 10_000;
    while ((await sendRaw(PORT, get("/headers"))).status !== 403) {
      assert.ok(Date.now() < deadline, "the DENY policy never applied");
      await new Promise((r) => setTimeout(r, 100));
    }
    const status = async (target: string, method?: string) =>
      (await sendRaw(PORT, get(target, method))).status;
    assert.equal(await status("//headers"), 403, "slashes merged");
    assert.equal(await status("/a/../headers"), 403, "dot segments resolved");
    assert.equal(await status("/\\headers"), 403, "backslash made / and merged");
    const encoded = await sendRaw(PORT, get("/%2Fheaders"));
    assert.equal(encoded.status, 200, "MERGE_SLASHES does not decode %2F");
    assert.equal(parseEcho(encoded.body).line, "GET /%2Fheaders HTTP/1.1");
    assert.equal(await status("/headers#x"), 400);
    assert.equal(await status("/anything", "delete"), 400);
    assert.equal(await status("/anything", "DELETE"), 403);

    const ctl = (args: string[]) => meshctl([...args, "--debug-address", meshd!.debugAddress]);
    const json = await ctl(["proxy-config", "listener", "httpbin-1.foo", "-o", "json"]);
    assert.equal(json.code, 0, json.err);
    const listeners = JSON.parse(json.out) as { http_connection_manager: Record<string, unknown> }[];
    assert.ok(listeners.length >= 2, json.out);
    for (const l of listeners) {
      assert.equal(l.http_connection_manager.path_normalization, "MERGE_SLASHES");
      assert.equal(l.http_connection_manager.merge_slashes, true);
      assert.equal(l.http_connection_manager.path_with_escaped_slashes_action, "KEEP_UNCHANGED");
    }
    const table = await ctl(["proxy-config", "listener", "httpbin-1.foo"]);
    assert.match(
      table.out,
      new RegExp(`127\\.0\\.0\\.1\\s+${PORT}\\s+INBOUND\\s+HTTP\\s+PERMISSIVE\\s+MERGE_SLASHES\\s`),
    );

    // meshctl's authz verdict is the proxy's, from the proxy's saved config dump and from meshd.
    const all = await ctl(["proxy-config", "all", "httpbin-1.foo", "-o", "json"]);
    assert.equal(all.code, 0, all.err);
    const dump = await Deno.makeTempFile({ suffix: ".json" });
    try {
      await Deno.writeTextFile(dump, all.out);
      for (const target of ["//headers", "/a/../headers", "/%2Fheaders"]) {
        const proxyStatus = await status(target);
        for (const source of [["-f", dump], ["httpbin-1.foo", "--debug-address", meshd.debugAddress]]) {
          const r = await meshctl([
            "x",
            "authz",
            "explain",
            ...source,
            "--port",
            String(PORT),
            "--path",
            target,
          ]);
          assert.equal(r.code, proxyStatus === 403 ? 3 : 0, `${target} ${source[0]}: ${r.out}${r.err}`);
          assert.match(r.out, /^path normalization: MERGE_SLASHES \(from /m);
        }
      }
    } finally {
      await Deno.remove(dump);
    }
  } catch (e) {
    if (proxy) console.error(proxy.output().slice(-3000));
    if (meshd) console.error(meshd.output().slice(-3000));
    throw e;
  } finally {
    await proxy?.stop();
    await meshd?.stop();
    await echo.stop();
  }
});
