import assert from "node:assert/strict";
import { buildPushContext } from "./push_context.ts";
import { configResource as res, httpsGateway, secretResource } from "./test_support.ts";
import { b64, makeTestCa } from "../../shared/credentials/_test_support.ts";

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

/**
 * Tries every way of changing `value` and everything reachable from it; returns where a change took.
 * Visited paths go into `seen`, so that a test can check the walk reached each collection.
 */
function mutationsThatTook(value: unknown, path: string, seen: Set<string>): string[] {
  if (value === null || typeof value !== "object") return [];
  seen.add(path);
  const took: string[] = [];
  const attempt = (what: string, change: () => void, changed: () => boolean) => {
    try {
      change();
    } catch {
      // Refused: what the push context must do.
    }
    if (changed()) took.push(`${path}: ${what}`);
  };
  const children: [string, unknown][] = [];
  if (typeof (value as ReadonlyMap<unknown, unknown>).get === "function" && "size" in value) {
    const map = value as Map<unknown, unknown>;
    const [first] = [...map.keys()];
    const size = map.size;
    attempt("set", () => map.set("mutated", 1), () => map.has("mutated"));
    attempt("Map.prototype.set", () => Map.prototype.set.call(map, "mutated2", 1), () => map.has("mutated2"));
    attempt("delete", () => map.delete(first), () => map.size !== size);
    attempt("clear", () => map.clear(), () => map.size !== size);
    for (const [k, v] of map) children.push([`${path}.get(${JSON.stringify(k)})`, v]);
  } else if (Array.isArray(value)) {
    const length = value.length;
    attempt("push", () => value.push("mutated"), () => value.length !== length);
    attempt("length = 0", () => (value.length = 0), () => value.length !== length);
    if (length > 0) {
      const before = value[0];
      attempt("[0] =", () => (value[0] = "mutated"), () => value[0] !== before);
    }
    value.forEach((v, i) => children.push([`${path}[${i}]`, v]));
  } else {
    const record = value as Record<string, unknown>;
    attempt("add a field", () => (record.mutated = 1), () => "mutated" in record);
    for (const [k, v] of Object.entries(record)) {
      attempt(`.${k} =`, () => (record[k] = "mutated"), () => record[k] !== v);
      children.push([`${path}.${k}`, v]);
    }
  }
  for (const [p, v] of children) took.push(...mutationsThatTook(v, p, seen));
  return took;
}

Deno.test("no collection of the push context can be changed: maps, arrays and objects all refuse", async () => {
  const { leaf } = await makeTestCa();
  const cert = await leaf("www.example.com");
  const secret = secretResource(
    "mesh-system",
    "www",
    { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    "kubernetes.io/tls",
  );
  const gatewayWe = res("WorkloadEntry", "mesh-system", "ingress", {
    address: "10.0.0.9",
    labels: { istio: "ingressgateway" },
    ports: { https: 8443 },
  }, { annotations: { "proxy.istio.io/config": "not: [valid" } });
  const gateway = httpsGateway([[443, "https", "www"], [8443, "https-missing", "none"]]);
  const vs = res("VirtualService", "mesh-system", "routes", {
    hosts: ["*"],
    gateways: ["public"],
    http: [{ route: [{ destination: { host: "httpbin.foo.svc.cluster.local" } }] }],
  });
  const authz = res("AuthorizationPolicy", "foo", "deny", {
    action: "DENY",
    rules: [{ to: [{ operation: { paths: ["/admin"] } }] }],
  });
  const ra = res("RequestAuthentication", "foo", "jwt", {
    jwtRules: [{ issuer: "iss", jwksUri: "https://keys" }],
  });
  const ctx = buildPushContext([
    httpbinSe,
    httpbinWe,
    strictFoo,
    portDisable,
    secret,
    gatewayWe,
    gateway,
    vs,
    authz,
    ra,
  ], {
    version: "1",
    jwks: new Map([["https://keys", '{"keys":[]}']]),
  });
  // Each collection the context hands out is present and not empty, so the walk below reaches into it.
  const collections = [
    "workloads",
    "services",
    "authorizationPolicies",
    "requestAuthentications",
    "gateways",
    "virtualServices",
    "jwks",
    "credentials",
    "gatewayRoutes",
    "gatewayWarnings",
  ] as const;
  for (const c of collections) {
    const v = ctx[c];
    assert.ok("size" in v ? v.size > 0 : v.length > 0, `${c} is empty: the test would not reach into it`);
  }
  const seen = new Set<string>();
  assert.deepEqual(mutationsThatTook(ctx, "ctx", seen), []);
  for (const path of [...collections.map((c) => `ctx.${c}`), "ctx.proxySettings"]) {
    assert.ok(seen.has(path), `${path} was not tried`);
  }
  for (const nested of ["ctx.services[0].endpoints[0].ports", 'ctx.workloads.get("foo/httpbin-1").labels']) {
    assert.ok(seen.has(nested), `${nested} was not tried`);
  }
  assert.ok([...seen].some((p) => p.startsWith('ctx.gatewayRoutes.get("mesh-system/ingress")[0].')));
});
