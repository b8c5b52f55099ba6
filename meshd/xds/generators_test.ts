import assert from "node:assert/strict";
import { decodeResource, RESOURCE_TYPES } from "../../shared/mod.ts";
import { buildPushContext, type ConfigResource } from "../push_context/push_context.ts";
import { configResource as res } from "../push_context/test_support.ts";
import { withConnected } from "../push_context/incremental.ts";
import { PushContextGenerator, TYPE_URLS, workloadKeyOf } from "./generators.ts";
import { b64, makeTestCa } from "../../shared/credentials/_test_support.ts";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";

const config = [
  res("WorkloadEntry", "foo", "httpbin-1", { address: "10.1.0.2", labels: { app: "httpbin" } }),
  res("WorkloadEntry", "foo", "sleep-1", { address: "10.1.0.3", labels: { app: "sleep" } }),
  res("AuthorizationPolicy", "foo", "httpbin-only", {
    selector: { matchLabels: { app: "httpbin" } },
    action: "DENY",
    rules: [{ to: [{ operation: { methods: ["GET"] } }] }],
  }),
  res("AuthorizationPolicy", "foo", "allow-nothing", {}),
  res("AuthorizationPolicy", "bar", "elsewhere", {}),
  res("RequestAuthentication", "foo", "jwt", {
    selector: { matchLabels: { app: "sleep" } },
    jwtRules: [{ issuer: "iss", jwks: '{"keys":[]}' }],
  }),
  res("ServiceEntry", "foo", "httpbin", {
    hosts: ["httpbin.foo.svc.cluster.local"],
    ports: [{ name: "http", number: 8000, targetPort: 8080 }],
    resolution: "STATIC",
    workloadSelector: { labels: { app: "httpbin" } },
  }),
];
const node = (ns: string, name: string) => ({
  id: `sidecar~1.2.3.4~${name}.${ns}~${ns}.svc.cluster.local`,
  cluster: "",
  metadata: {},
});

Deno.test("workloadKeyOf: node metadata first, then the Istio node id", () => {
  assert.equal(
    workloadKeyOf({ id: "x", cluster: "", metadata: { NAMESPACE: "foo", WORKLOAD_NAME: "a" } }),
    "foo/a",
  );
  assert.equal(workloadKeyOf(node("foo", "httpbin-1")), "foo/httpbin-1");
  assert.equal(workloadKeyOf({ id: "plain", cluster: "", metadata: {} }), undefined);
});

Deno.test("a proxy receives only what applies to it", () => {
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1" }));
  const names = (n: ReturnType<typeof node>, t: string) =>
    gen.generate(n, t)!.resources.map((r) => r.name).sort();
  assert.deepEqual(names(node("foo", "httpbin-1"), TYPE_URLS.authorization), [
    "foo/allow-nothing",
    "foo/httpbin-only",
  ]);
  assert.deepEqual(names(node("foo", "sleep-1"), TYPE_URLS.authorization), ["foo/allow-nothing"]);
  assert.deepEqual(names(node("foo", "sleep-1"), TYPE_URLS.jwtPolicy), ["foo/jwt"]);
  assert.deepEqual(names(node("foo", "httpbin-1"), TYPE_URLS.jwtPolicy), []);
  assert.deepEqual(names(node("foo", "httpbin-1"), TYPE_URLS.workload), ["foo/httpbin-1"]);
  assert.deepEqual(names(node("foo", "unknown"), TYPE_URLS.workload), []);
  assert.deepEqual(names(node("foo", "sleep-1"), TYPE_URLS.service), ["foo/httpbin"]);
  assert.equal(gen.generate(node("foo", "sleep-1"), "type.googleapis.com/other"), undefined);
});

Deno.test("generated resources decode to what the push context says", () => {
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1" }));
  const [authz] = gen.generate(node("foo", "httpbin-1"), TYPE_URLS.authorization)!.resources.filter((r) =>
    r.name === "foo/httpbin-only"
  );
  const msg = decodeResource(RESOURCE_TYPES.authorization, authz.body);
  assert.equal(msg.action, "DENY");
  assert.equal(msg.scope, "WORKLOAD_SELECTOR");
  assert.deepEqual(
    (msg.rules as { to: { operation: { methods: string[] } }[] }[])[0].to[0].operation.methods,
    ["GET"],
  );
  const [svc] = gen.generate(node("foo", "sleep-1"), TYPE_URLS.service)!.resources;
  const s = decodeResource(RESOURCE_TYPES.service, svc.body) as {
    endpoints: { address: string; ports: object }[];
  };
  assert.deepEqual(s.endpoints.map((e) => [e.address, e.ports]), [["10.1.0.2", { 8000: 8080 }]]);
});

Deno.test("a connecting proxy's own Workload is proxied at once: the push its connection sets off sends nothing more", () => {
  const ctx = buildPushContext(config, { version: "1" });
  assert.equal(ctx.workloads.get("foo/httpbin-1")?.proxied, false);
  const sidecar = node("foo", "httpbin-1");
  const router = { ...sidecar, id: sidecar.id.replace("sidecar~", "router~") };
  const proxied = (gen: PushContextGenerator, n: typeof sidecar) =>
    decodeResource(RESOURCE_TYPES.workload, gen.generate(n, TYPE_URLS.workload)!.resources[0].body).proxied;
  for (const enabled of [true, false]) {
    const gen = new PushContextGenerator(ctx, { enabled });
    const first = gen.generate(sidecar, TYPE_URLS.workload)!;
    assert.equal(proxied(gen, sidecar), true, "the proxy asking is connected");
    assert.equal(proxied(gen, router), false, "a gateway's connection does not make its workload proxied");
    // What the derived push context (the connection counted) generates: the same version, so the
    // stream's push finds nothing to send.
    gen.update(withConnected(ctx, new Set(["foo/httpbin-1"]), "2").context);
    const after = gen.generate(sidecar, TYPE_URLS.workload)!;
    assert.equal(after.version, first.version, `cache ${enabled}`);
    assert.deepEqual(after.resources[0].body, first.resources[0].body);
  }
});

Deno.test("encodings are shared between proxies, and versions follow content", () => {
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1" }));
  const la = gen.generate(node("foo", "sleep-1"), TYPE_URLS.service)!;
  const lb = gen.generate(node("foo", "httpbin-1"), TYPE_URLS.service)!;
  assert.equal(la, lb, "one Service list for every proxy");
  gen.update(buildPushContext(config, { version: "2" }));
  const lc = gen.generate(node("foo", "sleep-1"), TYPE_URLS.service)!;
  // The xDS cache: same content in the next push context, the same bytes (not encoded again).
  assert.equal(lc.resources[0], la.resources[0], "same content, same encoded resource");
  assert.equal(lc, la, "same resources, the same list: no diff at all");
  assert.equal(gen.version(), "2");
  const forHttpbin = gen.generate(node("foo", "httpbin-1"), TYPE_URLS.authorization)!.version;
  assert.notEqual(forHttpbin, gen.generate(node("foo", "sleep-1"), TYPE_URLS.authorization)!.version);
});

Deno.test("without the xDS cache every proxy's resources are encoded for it alone, to the same bytes", () => {
  const ctx = buildPushContext(config, { version: "1" });
  const off = new PushContextGenerator(ctx, { enabled: false });
  const on = new PushContextGenerator(ctx);
  const a = off.generate(node("foo", "sleep-1"), TYPE_URLS.service)!;
  const b = off.generate(node("foo", "httpbin-1"), TYPE_URLS.service)!;
  assert.notEqual(a, b);
  assert.notEqual(a.resources[0], b.resources[0]);
  assert.deepEqual(a, on.generate(node("foo", "sleep-1"), TYPE_URLS.service));
  assert.equal(off.cacheSize, 0);
});

Deno.test("proxies with the same namespace and labels share one policy list per push context", () => {
  const many = [
    ...config,
    res("WorkloadEntry", "foo", "sleep-2", { address: "10.1.0.4", labels: { app: "sleep" } }),
  ];
  const gen = new PushContextGenerator(buildPushContext(many, { version: "1" }));
  const a = gen.generate(node("foo", "sleep-1"), TYPE_URLS.authorization)!;
  const b = gen.generate(node("foo", "sleep-2"), TYPE_URLS.authorization)!;
  assert.equal(a, b, "one list, computed once");
  assert.notEqual(a, gen.generate(node("foo", "httpbin-1"), TYPE_URLS.authorization));
  assert.notEqual(
    gen.generate(node("foo", "sleep-1"), TYPE_URLS.workload),
    gen.generate(node("foo", "sleep-2"), TYPE_URLS.workload),
    "a Workload list is per workload",
  );
});

Deno.test("a workload's labels changed between push contexts: its proxy gets the policies of its new labels", () => {
  // sleep-2 keeps app: sleep and is asked first: a key kept from sleep-1's old labels would hand
  // sleep-1 the list of sleep-2.
  const relabel = (labels: Record<string, string>) => [
    ...config.map((r) =>
      r.kind === "WorkloadEntry" && r.name === "sleep-1"
        ? res("WorkloadEntry", "foo", "sleep-1", { address: "10.1.0.3", labels })
        : r
    ),
    res("WorkloadEntry", "foo", "sleep-2", { address: "10.1.0.4", labels: { app: "sleep" } }),
  ];
  const gen = new PushContextGenerator(buildPushContext(relabel({ app: "sleep" }), { version: "1" }));
  const names = () => {
    gen.generate(node("foo", "sleep-2"), TYPE_URLS.authorization);
    return gen.generate(node("foo", "sleep-1"), TYPE_URLS.authorization)!.resources.map((r) => r.name).sort();
  };
  assert.deepEqual(names(), ["foo/allow-nothing"]);
  gen.update(buildPushContext(relabel({ app: "httpbin" }), { version: "2" }));
  assert.deepEqual(names(), ["foo/allow-nothing", "foo/httpbin-only"]);
  // Same labels in another order, then one label more: the keys follow the set, not its order.
  gen.update(buildPushContext(relabel({ tier: "x", app: "httpbin" }), { version: "3" }));
  assert.deepEqual(names(), ["foo/allow-nothing", "foo/httpbin-only"]);
  gen.update(buildPushContext(relabel({ app: "sleep" }), { version: "4" }));
  assert.deepEqual(names(), ["foo/allow-nothing"]);
});

Deno.test("route configurations: only the gateway workload gets them, bound to its service's targetPort", () => {
  const withGateway = [
    ...config,
    res("WorkloadEntry", "mesh-system", "gw-1", { address: "10.1.0.9", labels: { istio: "ingressgateway" } }),
    res("ServiceEntry", "mesh-system", "gw", {
      hosts: ["gw.mesh-system.svc.cluster.local"],
      ports: [{ name: "http", number: 80, targetPort: 8080 }],
      resolution: "STATIC",
      workloadSelector: { labels: { istio: "ingressgateway" } },
    }),
    res("Gateway", "foo", "g", {
      selector: { istio: "ingressgateway" },
      servers: [{ port: { number: 80, name: "http", protocol: "HTTP" }, hosts: ["*"] }],
    }),
    // No destination port: httpbin has one port, so 8000 is filled in.
    res("VirtualService", "foo", "v", {
      hosts: ["*"],
      gateways: ["g"],
      http: [{ route: [{ destination: { host: "httpbin" } }] }],
    }),
  ];
  const gen = new PushContextGenerator(buildPushContext(withGateway, { version: "1" }));
  const gw = {
    id: "router~10.1.0.9~gw-1.mesh-system~mesh-system.svc.cluster.local",
    cluster: "",
    metadata: {},
  };
  const list = gen.generate(gw, TYPE_URLS.routeConfiguration)!;
  assert.deepEqual(list.resources.map((r) => r.name), ["http.80"]);
  const rc = decodeResource(RESOURCE_TYPES.routeConfiguration, list.resources[0].body);
  assert.equal(rc.bindPort, 8080);
  assert.deepEqual(
    (rc.virtualHosts as { routes: { destinations: unknown[] }[] }[])[0].routes[0].destinations,
    [
      { host: "httpbin.foo.svc.cluster.local", port: 8000, weight: 100 },
    ],
  );
  assert.deepEqual(gen.generate(node("foo", "sleep-1"), TYPE_URLS.routeConfiguration)!.resources, []);
});

Deno.test("JwtPolicy carries meshd's last good keys for jwksUri and OIDC rules, inline keys as written", () => {
  const ra = res("RequestAuthentication", "foo", "remote", {
    jwtRules: [
      { issuer: "a", jwksUri: "https://idp/keys" },
      { issuer: "https://oidc" },
      { issuer: "c", jwks: '{"keys":[]}' },
      { issuer: "d", jwksUri: "https://down/keys" },
    ],
  });
  const jwks = new Map([["https://idp/keys", '{"keys":[1]}'], ["oidc:https://oidc", '{"keys":[2]}']]);
  const gen = new PushContextGenerator(buildPushContext([...config, ra], { version: "1", jwks }));
  const [r] = gen.generate(node("foo", "httpbin-1"), TYPE_URLS.jwtPolicy)!.resources;
  const msg = decodeResource(RESOURCE_TYPES.jwtPolicy, r.body) as { providers: { jwks: string }[] };
  assert.deepEqual(msg.providers.map((p) => p.jwks), ['{"keys":[1]}', '{"keys":[2]}', '{"keys":[]}', ""]);
});

Deno.test("JwtPolicy says who fetches: hybrid sends mesh-host jwksUris to the proxy, with interval and timeout", () => {
  const ra = res("RequestAuthentication", "foo", "remote", {
    jwtRules: [
      { issuer: "mesh", jwksUri: "http://httpbin.foo.svc.cluster.local:8000/keys", timeout: "2s" },
      { issuer: "external", jwksUri: "https://idp/keys" },
      { issuer: "https://oidc" },
      { issuer: "inline", jwks: '{"keys":[]}' },
    ],
  });
  const jwks = new Map([
    ["http://httpbin.foo.svc.cluster.local:8000/keys", '{"keys":["stale"]}'],
    ["https://idp/keys", '{"keys":[1]}'],
    ["oidc:https://oidc", '{"keys":[2]}'],
  ]);
  type Provider = {
    jwks: string;
    jwksFetcher: string;
    jwksRefreshIntervalMs: number;
    jwksFetchTimeoutMs: number;
  };
  const providers = (jwksFetchMode: "meshd" | "hybrid" | "proxy") => {
    const ctx = buildPushContext([...config, ra], {
      version: "1",
      jwks,
      jwksFetchMode,
      jwksRefreshIntervalMs: 300,
    });
    const [r] =
      new PushContextGenerator(ctx).generate(node("foo", "httpbin-1"), TYPE_URLS.jwtPolicy)!.resources;
    return (decodeResource(RESOURCE_TYPES.jwtPolicy, r.body) as { providers: Provider[] }).providers;
  };
  const hybrid = providers("hybrid");
  assert.deepEqual(hybrid.map((p) => p.jwksFetcher), ["PROXY", "MESHD", "MESHD", "MESHD"]);
  assert.deepEqual(hybrid.map((p) => p.jwks), ["", '{"keys":[1]}', '{"keys":[2]}', '{"keys":[]}']);
  assert.equal(hybrid[0].jwksRefreshIntervalMs, 300);
  assert.equal(hybrid[0].jwksFetchTimeoutMs, 2000);
  assert.equal(hybrid[1].jwksRefreshIntervalMs, 0);
  assert.deepEqual(providers("proxy").map((p) => p.jwksFetcher), ["PROXY", "PROXY", "MESHD", "MESHD"]);
  assert.equal(providers("proxy")[1].jwksFetchTimeoutMs, 5000);
  assert.deepEqual(providers("meshd").map((p) => p.jwksFetcher), ["MESHD", "MESHD", "MESHD", "MESHD"]);
});

Deno.test("TLS credentials: a gateway gets only those its HTTPS servers name, from its own namespace", async () => {
  const { ca, leaf } = await makeTestCa();
  const cert = await leaf("httpbin.example.com");
  const secret = (namespace: string, name: string, data: Record<string, string>): ConfigResource => ({
    kind: "Secret",
    namespace,
    name,
    resource: { apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, type: "Opaque", data },
  });
  const pair = { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) };
  const https = (name: string, credentialName: string, mode: "SIMPLE" | "MUTUAL" = "SIMPLE") => ({
    port: { number: 443, name, protocol: "HTTPS" },
    hosts: [`${name}.example.com`],
    tls: { mode, credentialName },
  });
  const withGateway = [
    ...config,
    res("WorkloadEntry", "mesh-system", "gw-1", { address: "10.1.0.9", labels: { istio: "ingressgateway" } }),
    res("Gateway", "foo", "g", {
      selector: { istio: "ingressgateway" },
      servers: [https("a", "cred-a"), https("b", "cred-b", "MUTUAL"), https("c", "in-foo-only")],
    }),
    secret("mesh-system", "cred-a", pair),
    secret("mesh-system", "cred-b", { ...pair, "ca.crt": b64(ca.certPem) }),
    secret("mesh-system", "unused", pair),
    secret("foo", "in-foo-only", pair),
  ];
  const ctx = buildPushContext(withGateway, { version: "1" });
  const gen = new PushContextGenerator(ctx);
  const claimed = {
    id: "router~10.1.0.9~gw-1.mesh-system~mesh-system.svc.cluster.local",
    cluster: "",
    metadata: {},
  };
  // What a node claims is not enough for private keys: the plain-text port, no certificate, or a
  // certificate of another namespace get none.
  for (const verifiedIdentity of [undefined, "spiffe://cluster.local/ns/foo/sa/gw"]) {
    assert.deepEqual(gen.generate({ ...claimed, verifiedIdentity }, TYPE_URLS.tlsCredential)!.resources, []);
  }
  const gw = { ...claimed, verifiedIdentity: "spiffe://cluster.local/ns/mesh-system/sa/ingressgateway" };
  assert.deepEqual(gen.generate(gw, TYPE_URLS.routeConfiguration)!.resources.map((r) => r.name), [
    "https.443.a.g.foo",
    "https.443.b.g.foo",
  ]);
  const creds = gen.generate(gw, TYPE_URLS.tlsCredential)!.resources.map((r) =>
    decodeResource(RESOURCE_TYPES.tlsCredential, r.body)
  );
  assert.deepEqual(creds.map((c) => [c.name, c.source, c.privateKey !== "", c.caCertificates !== ""]), [
    ["kubernetes://cred-a", "mesh-system/cred-a", true, false],
    ["kubernetes://cred-b", "mesh-system/cred-b", true, true],
    // Istio's fallback: no cred-b-cacert Secret, so the CA of cred-b, and nothing else.
    ["kubernetes://cred-b-cacert", "mesh-system/cred-b", false, true],
  ]);
  assert.deepEqual(ctx.gatewayWarnings, [
    "Gateway foo/g spec.servers[2] (port 443) is not served on gateway mesh-system/gw-1: credentialName " +
    "in-foo-only: no Secret in-foo-only with a certificate and key in the gateway workload's namespace",
  ]);
  assert.deepEqual(
    gen.generate(
      { ...node("foo", "sleep-1"), verifiedIdentity: "spiffe://cluster.local/ns/foo/sa/sleep" },
      TYPE_URLS.tlsCredential,
    )!.resources,
    [],
  );
});

Deno.test("every Workload carries the mesh config's proxy settings", () => {
  const proxySettings = {
    ...DEFAULT_PROXY_SETTINGS,
    pathNormalization: "MERGE_SLASHES" as const,
    numTrustedProxies: 2,
  };
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1", proxySettings }));
  for (const name of ["httpbin-1", "sleep-1"]) {
    const [w] = gen.generate(node("foo", name), TYPE_URLS.workload)!.resources;
    assert.deepEqual(decodeResource(RESOURCE_TYPES.workload, w.body).settings, proxySettings);
  }
});

Deno.test("a workload's proxy.istio.io/config annotation overrides numTrustedProxies for it alone", () => {
  const proxySettings = { ...DEFAULT_PROXY_SETTINGS, numTrustedProxies: 1 };
  const gw = (name: string, annotation: string): ConfigResource => ({
    kind: "WorkloadEntry",
    namespace: "istio-system",
    name,
    resource: {
      metadata: { name, namespace: "istio-system", annotations: { "proxy.istio.io/config": annotation } },
      spec: { address: "10.1.0.9", labels: { istio: "ingressgateway" } },
    },
  });
  const ctx = buildPushContext([
    ...config,
    gw("gw-1", "gatewayTopology:\n  numTrustedProxies: 2\n"),
    gw("gw-2", "gatewayTopology: {numTrustedProxies: -1}"),
  ], { version: "1", proxySettings });
  const gen = new PushContextGenerator(ctx);
  const hops = (ns: string, name: string) => {
    const [w] = gen.generate(node(ns, name), TYPE_URLS.workload)!.resources;
    return (decodeResource(RESOURCE_TYPES.workload, w.body).settings as { numTrustedProxies: number })
      .numTrustedProxies;
  };
  assert.equal(hops("istio-system", "gw-1"), 2);
  assert.equal(hops("foo", "httpbin-1"), 1, "others keep the mesh-wide value");
  assert.equal(hops("istio-system", "gw-2"), 1, "an invalid annotation: the mesh-wide value, and a warning");
  assert.deepEqual(ctx.gatewayWarnings, [
    "WorkloadEntry istio-system/gw-2 annotation proxy.istio.io/config: gatewayTopology.numTrustedProxies: " +
    "-1 is not a whole number from 0 to 255; the mesh-wide settings apply",
  ]);
});
