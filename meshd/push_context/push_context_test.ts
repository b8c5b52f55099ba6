import assert from "node:assert/strict";
import { buildPushContext, type ConfigResource } from "./push_context.ts";

const res = (
  kind: string,
  namespace: string,
  name: string,
  spec: unknown,
  metadata = {},
): ConfigResource => ({
  kind,
  namespace,
  name,
  resource: { metadata: { name, namespace, ...metadata }, spec },
});

const httpbinSe = res("ServiceEntry", "foo", "httpbin", {
  hosts: ["httpbin.foo.svc.cluster.local"],
  ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "http" }],
  location: "MESH_INTERNAL",
  resolution: "STATIC",
  workloadSelector: { labels: { app: "httpbin" } },
});
const httpbinWe = res("WorkloadEntry", "foo", "httpbin-1", {
  address: "10.1.0.2",
  labels: { app: "httpbin" },
  serviceAccount: "httpbin",
});
const legacyWe = res("WorkloadEntry", "legacy", "sleep-1", { address: "10.3.0.2", labels: { app: "sleep" } });
const strictFoo = res("PeerAuthentication", "foo", "default", { mtls: { mode: "STRICT" } });
const portDisable = res("PeerAuthentication", "foo", "httpbin", {
  selector: { matchLabels: { app: "httpbin" } },
  mtls: { mode: "STRICT" },
  portLevelMtls: { "8080": { mode: "DISABLE" }, "9090": { mode: "DISABLE" } },
});

Deno.test("a ServiceEntry selects WorkloadEntries of its namespace; targetPort maps the endpoint port", () => {
  const ctx = buildPushContext([httpbinSe, httpbinWe, legacyWe], { version: "1" });
  assert.equal(ctx.services.length, 1);
  const [svc] = ctx.services;
  assert.deepEqual(svc.ports, [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }]);
  assert.deepEqual(svc.endpoints.map((e) => [e.workload, e.address, e.ports]), [[
    "foo/httpbin-1",
    "10.1.0.2",
    {
      8000: 8080,
    },
  ]]);
});

Deno.test("a WorkloadEntry's named port wins over targetPort", () => {
  const we = res("WorkloadEntry", "foo", "httpbin-2", {
    address: "10.1.0.3",
    labels: { app: "httpbin" },
    ports: { http: 9000 },
  });
  const ctx = buildPushContext([httpbinSe, we], { version: "1" });
  assert.deepEqual(ctx.services[0].endpoints[0].ports, { 8000: 9000 });
});

Deno.test("proxied: a connected proxy, or the tlsMode label; identity for secure naming only when proxied", () => {
  const labelled = res("WorkloadEntry", "foo", "httpbin-3", {
    address: "10.1.0.4",
    labels: { app: "httpbin", "security.istio.io/tlsMode": "istio" },
  });
  const ctx = buildPushContext([httpbinSe, httpbinWe, labelled, legacyWe], {
    version: "1",
    connected: new Set(["foo/httpbin-1"]),
  });
  assert.equal(ctx.workloads.get("foo/httpbin-1")!.proxied, true);
  assert.equal(ctx.workloads.get("foo/httpbin-3")!.proxied, true);
  assert.equal(ctx.workloads.get("legacy/sleep-1")!.proxied, false);
  const eps = ctx.services[0].endpoints;
  assert.deepEqual(eps.map((e) => e.identity), [
    "spiffe://cluster.local/ns/foo/sa/httpbin",
    "spiffe://cluster.local/ns/foo/sa/default",
  ]);
});

Deno.test("effective mTLS: no policy is PERMISSIVE by default", () => {
  const w = buildPushContext([httpbinSe, httpbinWe], { version: "1" }).workloads.get("foo/httpbin-1")!;
  assert.deepEqual(w.defaultMtls, { port: 0, mode: "PERMISSIVE", policy: "", scope: "default" });
  assert.deepEqual(w.inboundMtls, [{ port: 8080, mode: "PERMISSIVE", policy: "", scope: "default" }]);
});

Deno.test("effective mTLS: portLevelMtls applies to the bound port only", () => {
  const w = buildPushContext([httpbinSe, httpbinWe, strictFoo, portDisable], { version: "1" }).workloads.get(
    "foo/httpbin-1",
  )!;
  assert.deepEqual(w.inboundMtls, [{ port: 8080, mode: "DISABLE", policy: "foo/httpbin", scope: "port" }]);
  // 9090 is not bound to a service, so its port-level DISABLE is ignored: the workload's STRICT holds.
  assert.deepEqual(w.defaultMtls, { port: 0, mode: "STRICT", policy: "foo/httpbin", scope: "workload" });
});

Deno.test("effective mTLS: mesh-wide STRICT in the root namespace, and a custom root namespace", () => {
  const mesh = res("PeerAuthentication", "istio-system", "default", { mtls: { mode: "STRICT" } });
  const dflt = buildPushContext([httpbinWe, mesh], { version: "1" }).workloads.get("foo/httpbin-1")!;
  assert.equal(dflt.defaultMtls.mode, "PERMISSIVE");
  const custom = buildPushContext([httpbinWe, mesh], { version: "1", rootNamespace: "istio-system" });
  assert.deepEqual(custom.workloads.get("foo/httpbin-1")!.defaultMtls, {
    port: 0,
    mode: "STRICT",
    policy: "istio-system/default",
    scope: "mesh",
  });
});

Deno.test("inline ServiceEntry endpoints are served, proxied by their tlsMode label", () => {
  const se = res("ServiceEntry", "foo", "ext", {
    hosts: ["ext.example.com"],
    ports: [{ name: "http", number: 80 }],
    resolution: "STATIC",
    endpoints: [{ address: "10.9.0.1" }, {
      address: "10.9.0.2",
      labels: { "security.mesh.io/tlsMode": "mesh" },
    }],
  });
  const eps = buildPushContext([se], { version: "1" }).services[0].endpoints;
  assert.deepEqual(eps.map((e) => [e.address, e.proxied, e.ports]), [["10.9.0.1", false, { 80: 80 }], [
    "10.9.0.2",
    true,
    { 80: 80 },
  ]]);
});

Deno.test("the push context is frozen", () => {
  const ctx = buildPushContext([httpbinSe, httpbinWe], { version: "1" });
  assert.throws(() => (ctx.services as unknown[]).push(1));
  assert.throws(() => {
    (ctx.workloads.get("foo/httpbin-1")!.labels as Record<string, string>).x = "y";
  });
});
