import assert from "node:assert/strict";
import { encodeResource, RESOURCE_TYPES, typeUrlOf } from "../../shared/mod.ts";
import { decodeXdsResource, kindOf, ResourceError, SUBSCRIBED } from "./resources.ts";

// The type URLs of shared's resource types; that meshd generates these very URLs is checked in
// tests/integration/xds_type_urls_test.ts.
const TYPE_URLS = {
  workload: typeUrlOf(RESOURCE_TYPES.workload),
  service: typeUrlOf(RESOURCE_TYPES.service),
  authorization: typeUrlOf(RESOURCE_TYPES.authorization),
  jwtPolicy: typeUrlOf(RESOURCE_TYPES.jwtPolicy),
  routeConfiguration: typeUrlOf(RESOURCE_TYPES.routeConfiguration),
  tlsCredential: typeUrlOf(RESOURCE_TYPES.tlsCredential),
};
const any = (kind: keyof typeof RESOURCE_TYPES, value: Record<string, unknown>) => ({
  type_url: typeUrlOf(RESOURCE_TYPES[kind]),
  value: encodeResource(RESOURCE_TYPES[kind], value),
});

const WORKLOAD = {
  name: "sleep-1",
  namespace: "foo",
  serviceAccount: "sleep",
  trustDomain: "cluster.local",
  addresses: ["10.1.0.3"],
  labels: { app: "sleep" },
  proxied: true,
  ports: { http: 8080 },
  inboundMtls: [{ port: 8080, mode: "PERMISSIVE", policy: "foo/p", scope: "port" }],
  defaultMtls: { port: 0, mode: "STRICT", policy: "foo/default", scope: "namespace" },
  network: "n1",
};

const SERVICE = {
  name: "httpbin",
  namespace: "foo",
  hosts: ["httpbin.foo.svc.cluster.local"],
  addresses: ["240.240.0.1", "10.9.0.0/16"],
  ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }],
  endpoints: [{
    workload: "foo/httpbin-1",
    address: "10.1.0.2",
    ports: { 8000: 8080 },
    proxied: true,
    identity: "spiffe://cluster.local/ns/foo/sa/httpbin",
    labels: { app: "httpbin" },
    mtlsDisabledPorts: [8000],
  }],
  location: "MESH_INTERNAL",
  resolution: "STATIC",
};

Deno.test("SUBSCRIBED: the six types, with shared's type URLs", () => {
  assert.deepEqual(SUBSCRIBED.map((s) => s.typeUrl), [
    TYPE_URLS.workload,
    TYPE_URLS.service,
    TYPE_URLS.authorization,
    TYPE_URLS.jwtPolicy,
    TYPE_URLS.routeConfiguration,
    TYPE_URLS.tlsCredential,
  ]);
  assert.equal(kindOf(TYPE_URLS.service), "service");
  assert.equal(kindOf("type.googleapis.com/envoy.config.cluster.v3.Cluster"), undefined);
});

Deno.test("workload: decoded into WorkloadInfo, only the contract's fields", () => {
  const w = decodeXdsResource("workload", "foo/sleep-1", any("workload", WORKLOAD));
  assert.deepEqual(w, {
    name: "sleep-1",
    namespace: "foo",
    serviceAccount: "sleep",
    trustDomain: "cluster.local",
    addresses: ["10.1.0.3"],
    labels: { app: "sleep" },
    proxied: true,
    ports: { http: 8080 },
    inboundMtls: [{ port: 8080, mode: "PERMISSIVE", policy: "foo/p", scope: "port" }],
    defaultMtls: { port: 0, mode: "STRICT", policy: "foo/default", scope: "namespace" },
    settings: {
      pathNormalization: "DECODE_AND_MERGE_SLASHES",
      numTrustedProxies: 0,
      denialExplanation: { principals: [], ipBlocks: [] },
      outboundTrafficPolicy: "ALLOW_ANY",
    },
  });
  assert.deepEqual(structuredClone(w), w, "structured-cloneable");
});

Deno.test("workload: the settings meshd sent are decoded; absent ones are the defaults", () => {
  const settings = {
    pathNormalization: "DECODE_AND_MERGE_SLASHES",
    numTrustedProxies: 2,
    denialExplanation: { principals: ["cluster.local/ns/mesh-system/*"], ipBlocks: ["::1"] },
    outboundTrafficPolicy: "REGISTRY_ONLY",
  };
  const w = decodeXdsResource("workload", "foo/sleep-1", any("workload", { ...WORKLOAD, settings }));
  assert.deepEqual(w.settings, settings);
});

Deno.test("service: decoded into ServiceInfo; endpoint ports keyed by the service port as a string", () => {
  const s = decodeXdsResource("service", "foo/httpbin", any("service", SERVICE));
  assert.deepEqual(s.endpoints[0].ports, { "8000": 8080 });
  assert.deepEqual(s.ports, [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }]);
  assert.deepEqual(s.addresses, ["240.240.0.1", "10.9.0.0/16"]);
  assert.equal(s.endpoints[0].identity, "spiffe://cluster.local/ns/foo/sa/httpbin");
  assert.deepEqual(s.endpoints[0].mtlsDisabledPorts, [8000]);
});

Deno.test("authorization and jwtPolicy: decoded objects", () => {
  const a = decodeXdsResource(
    "authorization",
    "foo/deny",
    any("authorization", {
      name: "deny",
      namespace: "foo",
      action: "DENY",
      rules: [{ to: [{ operation: { methods: ["GET"] } }] }],
    }),
  );
  assert.equal(a.action, "DENY");
  assert.deepEqual((a.rules as { to: { operation: { methods: string[] } }[] }[])[0].to[0].operation.methods, [
    "GET",
  ]);
  const j = decodeXdsResource(
    "jwtPolicy",
    "foo/jwt",
    any("jwtPolicy", {
      name: "jwt",
      namespace: "foo",
      providers: [{ issuer: "me", jwks: "{}" }],
    }),
  );
  assert.equal((j.providers as { issuer: string }[])[0].issuer, "me");
});

const bad: {
  name: string;
  kind: keyof typeof RESOURCE_TYPES;
  resource: string;
  any: unknown;
  error: RegExp;
}[] = [
  {
    name: "garbage bytes",
    kind: "service",
    resource: "foo/httpbin",
    any: { type_url: TYPE_URLS.service, value: new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]) },
    error: /resource "foo\/httpbin": cannot decode mesh.v1.Service: /,
  },
  {
    name: "wrong type_url",
    kind: "service",
    resource: "foo/httpbin",
    any: { ...any("service", SERVICE), type_url: TYPE_URLS.workload },
    error: /type_url "type.googleapis.com\/mesh.v1.Workload" is not type.googleapis.com\/mesh.v1.Service/,
  },
  {
    name: "name differs from the resource name",
    kind: "service",
    resource: "foo/other",
    any: any("service", SERVICE),
    error: /its namespace\/name is foo\/httpbin/,
  },
  {
    name: "port 0",
    kind: "service",
    resource: "foo/httpbin",
    any: any("service", { ...SERVICE, ports: [{ name: "x", number: 0 }] }),
    error: /ports\[0\]\.number: 0 is not a port number/,
  },
  {
    name: "proxied endpoint without identity",
    kind: "service",
    resource: "foo/httpbin",
    any: any("service", { ...SERVICE, endpoints: [{ ...SERVICE.endpoints[0], identity: "" }] }),
    error: /endpoints\[0\]\.identity: "" is not a SPIFFE ID/,
  },
  {
    name: "mtlsDisabledPorts entry that is not a port",
    kind: "service",
    resource: "foo/httpbin",
    any: any("service", { ...SERVICE, endpoints: [{ ...SERVICE.endpoints[0], mtlsDisabledPorts: [70000] }] }),
    error: /endpoints\[0\]\.mtlsDisabledPorts\[0\]: 70000 is not a port number/,
  },
  {
    name: "unresolved mTLS mode",
    kind: "workload",
    resource: "foo/sleep-1",
    any: any("workload", { ...WORKLOAD, defaultMtls: { mode: "MTLS_MODE_UNSPECIFIED" } }),
    error: /defaultMtls\.mode "MTLS_MODE_UNSPECIFIED" is not DISABLE, PERMISSIVE or STRICT/,
  },
  {
    name: "unknown path normalization",
    kind: "workload",
    resource: "foo/sleep-1",
    any: any("workload", { ...WORKLOAD, settings: { pathNormalization: "SOMETIMES" } }),
    error: /settings\.pathNormalization: "SOMETIMES" is not one of NONE, BASE/,
  },
  {
    name: "denial explanation block that is not one",
    kind: "workload",
    resource: "foo/sleep-1",
    any: any("workload", { ...WORKLOAD, settings: { denialExplanation: { ipBlocks: ["10.0.0.0/99"] } } }),
    error: /settings\.denialExplanation\.ipBlocks\[0\]: "10\.0\.0\.0\/99" is not an IP address or CIDR block/,
  },
  {
    name: "bad workload address",
    kind: "workload",
    resource: "foo/sleep-1",
    any: any("workload", { ...WORKLOAD, addresses: ["10.1"] }),
    error: /addresses\[0\]: "10.1" is not an IP address/,
  },
  {
    name: "unknown action",
    kind: "authorization",
    resource: "foo/a",
    any: any("authorization", { name: "a", namespace: "foo", action: "MAYBE" }),
    error: /action "MAYBE" is not one of/,
  },
  {
    name: "provider without issuer",
    kind: "jwtPolicy",
    resource: "foo/j",
    any: any("jwtPolicy", { name: "j", namespace: "foo", providers: [{ jwks: "{}" }] }),
    error: /providers\[0\]\.issuer is required/,
  },
  { name: "no body", kind: "workload", resource: "foo/w", any: null, error: /no resource body/ },
];

for (const c of bad) {
  Deno.test(`refused with a clear message: ${c.name}`, () => {
    assert.throws(
      // deno-lint-ignore no-explicit-any
      () => decodeXdsResource(c.kind, c.resource, c.any as any),
      (e: unknown) => e instanceof ResourceError && c.error.test(e.message),
    );
  });
}

Deno.test("routeConfiguration: named http.<port>, no namespace; a bad regex or no destination is a NACK", () => {
  const rc = {
    name: "http.80",
    port: 80,
    bindPort: 8080,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: "*:80",
      domains: ["*"],
      routes: [{
        name: "foo/vs.0",
        matches: [{ exact: "", prefix: "", regex: "/a(", ignoreCase: false }],
        destinations: [{ host: "a.foo.svc.cluster.local", port: 80, weight: 100 }],
      }],
    }],
  };
  const ok = {
    ...rc,
    virtualHosts: [{ ...rc.virtualHosts[0], routes: [{ ...rc.virtualHosts[0].routes[0], matches: [] }] }],
  };
  assert.equal(
    decodeXdsResource("routeConfiguration", "http.80", any("routeConfiguration", ok)).bindPort,
    8080,
  );
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["http.81", ok, /its name is "http\.80"/],
    ["http.80", rc, /virtualHosts\[0\]\.routes\[0\]\.matches\[0\]\.regex: Invalid regular expression/],
    [
      "http.80",
      {
        ...ok,
        virtualHosts: [{
          ...ok.virtualHosts[0],
          routes: [{ ...ok.virtualHosts[0].routes[0], destinations: [] }],
        }],
      },
      /routes\[0\]\.destinations is empty/,
    ],
  ];
  for (const [name, value, want] of cases) {
    assert.throws(
      () => decodeXdsResource("routeConfiguration", name, any("routeConfiguration", value)),
      want,
    );
  }
});

Deno.test("routeConfiguration with tls, and tlsCredential: decoded; unusable ones are a NACK", () => {
  const tls = {
    mode: "MUTUAL",
    sniHosts: ["httpbin.example.com"],
    credentialName: "kubernetes://c",
    caCredentialName: "kubernetes://c-cacert",
  };
  const rc = { name: "https.443.https.gw.foo", port: 443, bindPort: 8443, tls };
  const decoded = decodeXdsResource("routeConfiguration", rc.name, any("routeConfiguration", rc));
  assert.equal(decoded.tls?.mode, "MUTUAL");
  const plain = decodeXdsResource(
    "routeConfiguration",
    "http.80",
    any("routeConfiguration", { name: "http.80", port: 80, bindPort: 80 }),
  );
  assert.equal("tls" in plain, false, "plain text: no tls");
  assert.equal("tlsRoutes" in plain, false, "plain text: no tlsRoutes");
  assert.equal("tlsRoutes" in decoded, false, "terminated TLS: no tlsRoutes");
  const route = {
    name: "foo/nginx.tls.0",
    sniHosts: ["nginx.example.com"],
    destinations: [{ host: "n", port: 443 }],
  };
  const pass = {
    name: "tls.443.https.gw.foo",
    port: 443,
    bindPort: 8443,
    tls: { mode: "PASSTHROUGH", sniHosts: ["nginx.example.com"] },
    tlsRoutes: [route],
  };
  const passed = decodeXdsResource("routeConfiguration", pass.name, any("routeConfiguration", pass));
  assert.deepEqual(
    [passed.tls?.mode, passed.tlsRoutes],
    ["PASSTHROUGH", [{ ...route, destinations: [{ host: "n", port: 443, weight: 0 }] }]],
  );
  const cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const cred = {
    name: "kubernetes://c",
    certificateChain: cert,
    privateKey: "k",
    caCertificates: "",
    source: "mesh-system/c",
  };
  assert.equal(
    decodeXdsResource("tlsCredential", "kubernetes://c", any("tlsCredential", cred)).source,
    "mesh-system/c",
  );
  const cases: [string, ReturnType<typeof any>, RegExp][] = [
    [
      rc.name,
      any("routeConfiguration", { ...rc, tls: { ...tls, mode: "ISTIO_MUTUAL" } }),
      /tls\.mode "ISTIO_MUTUAL" is not SIMPLE, MUTUAL or PASSTHROUGH/,
    ],
    [pass.name, any("routeConfiguration", { ...pass, tlsRoutes: [] }), /PASSTHROUGH without tlsRoutes/],
    [
      pass.name,
      any("routeConfiguration", { ...pass, tlsRoutes: [{ ...route, destinations: [] }] }),
      /tlsRoutes\[0\]\.destinations is empty/,
    ],
    [
      pass.name,
      any("routeConfiguration", { ...pass, tlsRoutes: [{ ...route, sniHosts: [] }] }),
      /tlsRoutes\[0\]\.sniHosts is empty/,
    ],
    [
      pass.name,
      any("routeConfiguration", {
        ...pass,
        tlsRoutes: [{ ...route, destinations: [{ host: "a", port: 0, weight: 1 }] }],
      }),
      /tlsRoutes\[0\]\.destinations\[0\]\.port: 0 is not a port number/,
    ],
    [rc.name, any("routeConfiguration", { ...rc, tlsRoutes: [route] }), /tlsRoutes with tls.mode MUTUAL/],
    [
      "http.80",
      any("routeConfiguration", { ...pass, name: "http.80", tls: undefined }),
      /tlsRoutes without tls/,
    ],
    [
      rc.name,
      any("routeConfiguration", { ...rc, tls: { ...tls, caCredentialName: "" } }),
      /caCredentialName is required for MUTUAL/,
    ],
    [rc.name, any("routeConfiguration", { ...rc, tls: { ...tls, sniHosts: [] } }), /sniHosts is empty/],
    [
      "kubernetes://c",
      any("tlsCredential", { ...cred, privateKey: "" }),
      /certificateChain and privateKey come together/,
    ],
    [
      "kubernetes://c",
      any("tlsCredential", { ...cred, certificateChain: "", privateKey: "" }),
      /neither a certificate nor a CA/,
    ],
    ["kubernetes://d", any("tlsCredential", cred), /its name is "kubernetes:\/\/c"/],
  ];
  for (const [name, value, want] of cases) {
    const kind = value.type_url.endsWith("TlsCredential") ? "tlsCredential" : "routeConfiguration";
    assert.throws(() => decodeXdsResource(kind, name, value), want);
  }
});
