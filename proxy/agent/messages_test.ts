import assert from "node:assert/strict";
import { encodeResource, RESOURCE_TYPES } from "../../shared/mod.ts";
import { decodeMessage, type MessageOf } from "./messages.ts";

// One value of each message with every field set (non-empty lists, so that nested messages are
// compared too). Typed as the message types, so a field the types lack does not compile, and
// compared after a trip through the descriptors, so a field the proto lacks (or has more of) fails.
const SAMPLES: MessageOf = {
  workload: {
    name: "w",
    namespace: "foo",
    serviceAccount: "sa",
    trustDomain: "cluster.local",
    addresses: ["10.0.0.1"],
    labels: { app: "w" },
    proxied: true,
    ports: { http: 8080 },
    inboundMtls: [{ port: 8080, mode: "STRICT", policy: "foo/p", scope: "port" }],
    defaultMtls: { port: 0, mode: "PERMISSIVE", policy: "", scope: "default" },
    network: "n1",
    locality: "r/z",
    weight: 3,
    settings: {
      pathNormalization: "MERGE_SLASHES",
      numTrustedProxies: 1,
      denialExplanation: { principals: ["p"], ipBlocks: ["10.0.0.0/8"] },
      outboundTrafficPolicy: "REGISTRY_ONLY",
    },
  },
  service: {
    name: "s",
    namespace: "foo",
    hosts: ["s.foo.svc.cluster.local"],
    addresses: ["240.0.0.1"],
    ports: [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }],
    endpoints: [{
      workload: "foo/w",
      address: "10.0.0.1",
      ports: { "80": 8080 },
      proxied: true,
      identity: "spiffe://cluster.local/ns/foo/sa/sa",
      labels: { app: "w" },
      mtlsDisabledPorts: [80],
    }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  },
  authorization: {
    name: "a",
    namespace: "foo",
    action: "DENY",
    scope: "NAMESPACE",
    rules: [],
    rulesAbsent: true,
  },
  jwtPolicy: {
    name: "j",
    namespace: "foo",
    providers: [{
      issuer: "iss",
      audiences: ["aud"],
      jwks: "{}",
      jwksUri: "https://keys",
      fromHeaders: [{ name: "x-jwt", prefix: "Bearer " }],
      fromParams: ["token"],
      fromCookies: ["c"],
      outputPayloadToHeader: "x-payload",
      forwardOriginalToken: true,
      outputClaimToHeaders: [{ header: "x-sub", claim: "sub" }],
      spaceDelimitedClaims: ["scope"],
      jwksFetcher: "PROXY",
      jwksRefreshIntervalMs: 60000,
      jwksFetchTimeoutMs: 5000,
    }],
  },
  routeConfiguration: {
    name: "https.443.https.gw.foo",
    port: 443,
    bindPort: 8443,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: "vh",
      domains: ["a.example.com"],
      routes: [{
        name: "r",
        matches: [{ exact: "", prefix: "/", regex: "", ignoreCase: true }],
        destinations: [{ host: "s.foo.svc.cluster.local", port: 80, weight: 100 }],
        timeoutMs: 1500,
      }],
      httpsRedirect: true,
    }],
    tls: {
      mode: "SIMPLE",
      sniHosts: ["a.example.com"],
      credentialName: "kubernetes://c",
      caCredentialName: "",
      minProtocolVersion: "TLSV1_2",
      maxProtocolVersion: "TLSV1_3",
      subjectAltNames: ["san"],
    },
    tlsRoutes: [{
      name: "foo/vs.tls.0",
      sniHosts: ["b.example.com"],
      destinations: [{ host: "t.foo.svc.cluster.local", port: 443, weight: 100 }],
    }],
  },
  tlsCredential: {
    name: "kubernetes://c",
    certificateChain: "chain",
    privateKey: "key",
    caCertificates: "ca",
    source: "foo/c",
  },
};

for (const kind of Object.keys(RESOURCE_TYPES) as (keyof MessageOf)[]) {
  Deno.test(`decodeMessage(${kind}): the message type has exactly the descriptor's fields`, () => {
    const sample = SAMPLES[kind];
    assert.deepEqual(decodeMessage(kind, encodeResource(RESOURCE_TYPES[kind], sample)), sample);
  });
}

Deno.test("decodeMessage: an empty message has every field, at its zero value", () => {
  assert.deepEqual(decodeMessage("tlsCredential", new Uint8Array()), {
    name: "",
    certificateChain: "",
    privateKey: "",
    caCertificates: "",
    source: "",
  });
  const route = decodeMessage("routeConfiguration", new Uint8Array());
  assert.equal(route.tls, null);
  assert.deepEqual(route.virtualHosts, []);
});

Deno.test("decodeMessage: bytes that are not the message throw", () => {
  assert.throws(() => decodeMessage("workload", new Uint8Array([0x0a, 0xff])));
});
