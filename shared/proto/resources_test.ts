import assert from "node:assert/strict";
import { decodeResource, encodeResource, RESOURCE_TYPES, typeUrlOf } from "./resources.ts";

const cases: { type: keyof typeof RESOURCE_TYPES; value: Record<string, unknown> }[] = [
  {
    type: "workload",
    value: {
      name: "httpbin-1",
      namespace: "foo",
      serviceAccount: "httpbin",
      trustDomain: "cluster.local",
      addresses: ["10.0.0.5"],
      labels: { app: "httpbin" },
      proxied: true,
      ports: { http: 8080 },
      inboundMtls: [{ port: 8080, mode: "DISABLE", policy: "foo/httpbin", scope: "port" }],
      defaultMtls: { port: 0, mode: "STRICT", policy: "foo/default", scope: "namespace" },
    },
  },
  {
    type: "service",
    value: {
      name: "httpbin",
      namespace: "foo",
      hosts: ["httpbin.foo.svc.cluster.local"],
      ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }],
      endpoints: [{
        workload: "foo/httpbin-1",
        address: "10.0.0.5",
        ports: { 8000: 8080 },
        proxied: true,
        identity: "spiffe://cluster.local/ns/foo/sa/httpbin",
      }],
    },
  },
  {
    type: "authorization",
    value: {
      name: "deny-get",
      namespace: "foo",
      action: "DENY",
      scope: "WORKLOAD_SELECTOR",
      rules: [{ to: [{ operation: { methods: ["GET"], paths: ["/get"] } }] }],
    },
  },
  {
    type: "jwtPolicy",
    value: {
      name: "jwt-example",
      namespace: "foo",
      providers: [{
        issuer: "testing@secure.istio.io",
        jwks: '{"keys":[]}',
        fromHeaders: [{ name: "x-jwt" }],
      }],
    },
  },
];

/** Every field of `want` is in `got` with the same value; decoding adds defaults for the rest. */
function assertContains(got: unknown, want: unknown, at: string): void {
  if (want !== null && typeof want === "object") {
    assert.ok(got !== null && typeof got === "object", `${at}: expected an object`);
    for (const [k, v] of Object.entries(want)) {
      assertContains((got as Record<string, unknown>)[k], v, `${at}.${k}`);
    }
  } else assert.equal(got, want, at);
}

for (const c of cases) {
  Deno.test(`${RESOURCE_TYPES[c.type]} survives encode and decode`, () => {
    const bytes = encodeResource(RESOURCE_TYPES[c.type], c.value);
    assert.ok(bytes.length > 0);
    const back = decodeResource(RESOURCE_TYPES[c.type], bytes);
    assertContains(back, c.value, RESOURCE_TYPES[c.type]);
  });
}

Deno.test("decoding fills in defaults, so a proxy never sees undefined lists", () => {
  const back = decodeResource(
    RESOURCE_TYPES.workload,
    encodeResource(RESOURCE_TYPES.workload, { name: "w" }),
  );
  assert.deepEqual(back.addresses, []);
  assert.deepEqual(back.labels, {});
  assert.equal(back.proxied, false);
});

Deno.test("encoding a value of the wrong shape names the type and field", () => {
  assert.throws(
    () => encodeResource(RESOURCE_TYPES.workload, { addresses: "10.0.0.1" }),
    /mesh\.v1\.Workload: addresses: array expected/,
  );
});

Deno.test("encoding refuses unknown fields, also nested, instead of dropping them", () => {
  assert.throws(
    () => encodeResource(RESOURCE_TYPES.workload, { name: "w", serviceAcount: "sa" }),
    /mesh\.v1\.Workload: unknown field serviceAcount/,
  );
  assert.throws(
    () =>
      encodeResource(RESOURCE_TYPES.authorization, {
        rules: [{ to: [{ operation: { method: ["GET"] } }] }],
      }),
    /unknown field rules\[0\]\.to\[0\]\.operation\.method/,
  );
});

Deno.test("garbage bytes do not decode", () => {
  assert.throws(() => decodeResource(RESOURCE_TYPES.service, new Uint8Array([0xff, 0xff, 0xff, 0xff])));
});

Deno.test("type URLs are the Any form", () => {
  assert.equal(typeUrlOf(RESOURCE_TYPES.authorization), "type.googleapis.com/mesh.v1.Authorization");
});
