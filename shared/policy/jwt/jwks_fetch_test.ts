/** Who fetches a rule's keys under each DISCO_JWT_ENABLE_REMOTE_JWKS mode. */
import assert from "node:assert/strict";
import { isMeshHost, jwksFetcherOf, jwksSourceKey, parseJwksFetchMode } from "./jwks_fetch.ts";

const SERVICES = [
  { namespace: "foo", hosts: ["jwks.foo.svc.cluster.local"] },
  { namespace: "idp", hosts: ["auth.example.com", "keys.example.com"] },
  { namespace: "other", hosts: ["keys.example.com"] },
];

Deno.test("parseJwksFetchMode: Istio's values and the mesh's names; anything else is an error", () => {
  assert.equal(parseJwksFetchMode("false"), "meshd");
  assert.equal(parseJwksFetchMode("meshd"), "meshd");
  assert.equal(parseJwksFetchMode("istiod"), "meshd");
  assert.equal(parseJwksFetchMode("true"), "hybrid");
  assert.equal(parseJwksFetchMode("hybrid"), "hybrid");
  assert.equal(parseJwksFetchMode("proxy"), "proxy");
  assert.equal(parseJwksFetchMode("envoy"), "proxy");
  assert.throws(
    () => parseJwksFetchMode("Proxy"),
    /"Proxy" is not one of false, meshd, istiod, true, hybrid/,
  );
  assert.throws(() => parseJwksFetchMode("toString"), /not one of/);
});

Deno.test("jwksSourceKey: jwksUri, OIDC discovery for an issuer alone, nothing for inline keys", () => {
  assert.equal(jwksSourceKey({ issuer: "i", jwksUri: "https://x/k" }), "https://x/k");
  assert.equal(jwksSourceKey({ issuer: "https://idp" }), "oidc:https://idp");
  assert.equal(jwksSourceKey({ issuer: "i", jwks: '{"keys":[]}' }), undefined);
});

Deno.test("isMeshHost: a host of one namespace's services, any case, trailing dot ignored", () => {
  assert.equal(isMeshHost("jwks.foo.svc.cluster.local", SERVICES), true);
  assert.equal(isMeshHost("JWKS.foo.svc.cluster.local.", SERVICES), true);
  assert.equal(isMeshHost("auth.example.com", SERVICES), true);
  // In two namespaces: ambiguous, as Istio's LookupCluster.
  assert.equal(isMeshHost("keys.example.com", SERVICES), false);
  assert.equal(isMeshHost("jwks", SERVICES), false);
  assert.equal(isMeshHost("127.0.0.1", SERVICES), false);
});

Deno.test("jwksFetcherOf: meshd mode, meshd always; proxy mode, the proxy for every jwksUri", () => {
  const options = { services: SERVICES };
  const mesh = { issuer: "i", jwksUri: "http://jwks.foo.svc.cluster.local:8000/keys" };
  const external = { issuer: "i", jwksUri: "https://www.googleapis.com/oauth2/v3/certs" };
  const oidc = { issuer: "https://accounts.google.com" };
  const inline = { issuer: "i", jwks: '{"keys":[]}' };
  assert.deepEqual(
    [mesh, external, oidc, inline].map((r) => jwksFetcherOf(r, { ...options, mode: "meshd" })),
    ["meshd", "meshd", "meshd", undefined],
  );
  assert.deepEqual(
    [mesh, external, oidc, inline].map((r) => jwksFetcherOf(r, { ...options, mode: "proxy" })),
    ["proxy", "proxy", "meshd", undefined],
  );
});

Deno.test("jwksFetcherOf: hybrid mode, the proxy for mesh hosts, meshd for external ones and OIDC", () => {
  const hybrid = { mode: "hybrid" as const, services: SERVICES };
  assert.equal(
    jwksFetcherOf({ issuer: "i", jwksUri: "http://jwks.foo.svc.cluster.local:8000/k" }, hybrid),
    "proxy",
  );
  assert.equal(
    jwksFetcherOf({ issuer: "i", jwksUri: "https://auth.example.com/.well-known/jwks" }, hybrid),
    "proxy",
  );
  assert.equal(jwksFetcherOf({ issuer: "i", jwksUri: "https://keys.example.com/jwks" }, hybrid), "meshd");
  assert.equal(jwksFetcherOf({ issuer: "i", jwksUri: "http://127.0.0.1:9000/keys" }, hybrid), "meshd");
  assert.equal(jwksFetcherOf({ issuer: "i", jwksUri: "not a url" }, hybrid), "meshd");
  assert.equal(jwksFetcherOf({ issuer: "https://jwks.foo.svc.cluster.local" }, hybrid), "meshd");
  assert.equal(
    jwksFetcherOf({ issuer: "i", jwksUri: "http://jwks.foo.svc.cluster.local/k" }, {
      mode: "hybrid",
      services: [],
    }),
    "meshd",
  );
});
