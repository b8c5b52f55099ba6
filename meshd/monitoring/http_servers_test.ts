import assert from "node:assert/strict";
import { STRICT, withDiscovery } from "../server/test_support.ts";
import { TYPE_URLS } from "../xds/generators.ts";
import { DebugPages } from "../server/debug_pages.ts";
import { serveDebug, serveMonitoring } from "./http_servers.ts";
import { discoveryObservers } from "./instrument.ts";
import { createMetrics } from "./metrics.ts";
import { b64, makeTestCa, tlsSecretYaml } from "../../shared/credentials/_test_support.ts";

Deno.test("/metrics counts connections, pushes, rejected configs and convergence; debug endpoints show the proxy", async () => {
  const metrics = createMetrics();
  const observers = discoveryObservers(metrics);
  await withDiscovery(async ({ dir, connect, server, rejected }) => {
    const mon = serveMonitoring(metrics, {
      address: { host: "127.0.0.1", port: 0 },
      localhostOnly: true,
      ready: () => true,
    });
    const dbg = serveDebug(new DebugPages(server), { host: "127.0.0.1", port: 0 });
    try {
      const p = connect("foo", "httpbin-1");
      await p.until(() => p.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
      await Deno.writeTextFile(`${dir}/strict.yaml`, STRICT);
      await Deno.writeTextFile(`${dir}/bad.yaml`, STRICT.replace("STRICT", "NOPE").replace("default", "bad"));
      await p.until(() => rejected.length > 0, 2000);
      await p.until(
        () => p.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1")?.defaultMtls?.mode === "STRICT",
        2000,
      );
      await new Promise((r) => setTimeout(r, 100));
      const text = await (await fetch(`http://127.0.0.1:${mon.addr.port}/metrics`)).text();
      assert.match(text, /^disco_xds 1$/m);
      assert.match(text, /^disco_total_rejected_configs\{type="PeerAuthentication"\} 1$/m);
      assert.match(text, /^disco_xds_pushes\{type="mesh.v1.Workload"\} [1-9]/m);
      assert.match(text, /^disco_push_triggers\{type="config"\} [1-9]/m);
      assert.match(text, /^disco_proxy_convergence_time_count [1-9]/m);
      assert.match(text, /^disco_xds_push_time_count\{type="mesh.v1.Service"\} [1-9]/m);
      assert.match(text, /^disco_services 1$/m);
      assert.match(text, /^meshd_uptime_seconds \d/m);
      assert.match(text, /^mesh_build\{component="meshd",tag="\d+\.\d+\.\d+"\} 1$/m);
      const ready = await fetch(`http://127.0.0.1:${mon.addr.port}/ready`);
      assert.equal(ready.status, 200);
      await ready.body?.cancel();

      const syncz = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/syncz`)).json();
      assert.equal(syncz.length, 1);
      assert.match(syncz[0].proxy, /httpbin-1\.foo/);
      const workloadSync = syncz[0].types.find((t: { typeUrl: string }) => t.typeUrl === TYPE_URLS.workload);
      assert.equal(workloadSync.lastAckedNonce, workloadSync.lastSentNonce, "everything sent was ACKed");
      const registryz = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/registryz`)).json();
      assert.equal(registryz.services[0].key, "foo/httpbin");
      assert.equal(registryz.workloads.find((w: { key: string }) => w.key === "foo/httpbin-1").proxied, true);
      const configz = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/configz`)).json();
      assert.ok(configz.resources.some((r: { key: string }) => r.key === "PeerAuthentication/foo/default"));
      const connections = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/connections`)).json();
      assert.equal(connections.length, 1);
      assert.equal(connections[0].workload, "foo/httpbin-1");
      assert.equal(syncz[0].workload, "foo/httpbin-1");
      const nope = await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/nope`);
      assert.equal(nope.status, 404);
      await nope.body?.cancel();

      const dump = await (await fetch(
        `http://127.0.0.1:${dbg.addr.port}/debug/config_dump?proxyID=foo/httpbin-1`,
      )).json();
      assert.equal(dump.proxy, syncz[0].proxy);
      const workloadType = dump.types.find((t: { typeUrl: string }) => t.typeUrl === TYPE_URLS.workload);
      assert.equal(workloadType.version, registryz.version, "a push now carries the push context's version");
      assert.match(workloadType.listVersion, /^[0-9a-f]{16}$/);
      assert.equal(workloadType.resources[0].name, "foo/httpbin-1");
      assert.equal(workloadType.resources[0].value.defaultMtls.mode, "STRICT");
      const missing = await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/config_dump?proxyID=foo/nope`);
      assert.equal(missing.status, 404);
      assert.match((await missing.json()).error, /proxy "foo\/nope" is not connected/);
      const noId = await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/config_dump`);
      assert.equal(noId.status, 400);
      await noId.body?.cancel();
      const mesh = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/mesh`)).json();
      assert.deepEqual(mesh, {
        rootNamespace: "mesh-system",
        trustDomain: "cluster.local",
        pathNormalization: "DECODE_AND_MERGE_SLASHES",
      });
      const version = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/version`)).json();
      assert.equal(version.component, "meshd");
      assert.match(version.version, /^\d+\.\d+\.\d+$/);
    } finally {
      await mon.shutdown();
      await dbg.shutdown();
    }
  }, observers);
});

Deno.test("/debug/configz shows a gateway Secret's certificate but never its private key", async () => {
  const { leaf } = await makeTestCa();
  const cert = await leaf("httpbin.example.com");
  await withDiscovery(async ({ dir, server }) => {
    const dbg = serveDebug(server.debugPages, { host: "127.0.0.1", port: 0 });
    try {
      await Deno.writeTextFile(
        `${dir}/secret.yaml`,
        tlsSecretYaml("httpbin-credential", "mesh-system", cert),
      );
      let text = "";
      const pushed = () => server.pushContext.credentials.has("mesh-system/httpbin-credential");
      for (let i = 0; i < 100 && !(text.includes("httpbin-credential") && pushed()); i++) {
        await new Promise((r) => setTimeout(r, 50));
        text = await (await fetch(`http://127.0.0.1:${dbg.addr.port}/debug/configz`)).text();
      }
      const secret = JSON.parse(text).resources.find((r: { key: string }) =>
        r.key === "Secret/mesh-system/httpbin-credential"
      );
      assert.equal(secret.resource.data["tls.key"], "[redacted]");
      assert.equal(secret.resource.data["tls.crt"], b64(cert.certPem));
      assert.ok(!text.includes(b64(cert.keyPem).slice(0, 40)), "no key material");
      assert.equal(
        server.pushContext.credentials.get("mesh-system/httpbin-credential")?.privateKeyPem,
        cert.keyPem,
      );
    } finally {
      await dbg.shutdown();
    }
  });
});
