import assert from "node:assert/strict";
import { assertFindings, type ExpectedFinding as Expected } from "./_test_support.ts";
import { parse } from "yaml";
import { validateResource } from "../validate_resource.ts";
import { MAX_JWKS_URI_LENGTH, requestAuthentication } from "./request_authentication.ts";

interface Case {
  name: string;
  spec: unknown;
  /** Every finding, exactly; [] means the resource is clean. */
  want: Expected[];
}

const err = (path: (string | number)[], message: string): Expected => ({ severity: "error", path, message });
const warn = (path: (string | number)[], message: string): Expected => ({
  severity: "warning",
  path,
  message,
});

function resource(spec: unknown): unknown {
  return {
    apiVersion: "security.mesh.io/v1",
    kind: "RequestAuthentication",
    metadata: { name: "ra", namespace: "foo" },
    spec,
  };
}

const ISSUER = "https://issuer.example.com";
const JWKS_URI = "https://issuer.example.com/.well-known/jwks.json";
const RSA_PUBLIC = { kty: "RSA", e: "AQAB", n: "xAE7eB6qugXyCAG3yhh7pkDkT65pHymX", kid: "k1" };

/** A spec with one JWT rule: the valid base rule plus the given fields (undefined removes a field). */
function rule(fields: Record<string, unknown>): unknown {
  const r: Record<string, unknown> = { issuer: ISSUER, jwksUri: JWKS_URI, ...fields };
  for (const k of Object.keys(r)) if (r[k] === undefined) delete r[k];
  return { selector: { matchLabels: { app: "httpbin" } }, jwtRules: [r] };
}

const R0 = ["spec", "jwtRules", 0];
const at = (...rest: (string | number)[]) => [...R0, ...rest];

/** A jwksUri of exactly `length` characters. */
function uriOfLength(length: number): string {
  const base = "https://issuer.example.com/";
  return base + "k".repeat(length - base.length);
}

const cases: Case[] = [
  // ---- basics
  { name: "spec {} is valid", spec: {}, want: [] },
  { name: "jwtRules [] is valid", spec: { jwtRules: [] }, want: [] },
  { name: "a minimal rule (issuer + jwksUri) is valid", spec: rule({}), want: [] },
  {
    name: "a rule with every field set is valid",
    spec: rule({
      audiences: ["bookstore.example.com", "api"],
      fromHeaders: [{ name: "Authorization", prefix: "Bearer " }, { name: "x-jwt" }],
      fromParams: ["access_token"],
      fromCookies: ["session"],
      outputPayloadToHeader: "x-jwt-payload",
      forwardOriginalToken: true,
      outputClaimToHeaders: [{ header: "x-sub", claim: "sub" }, { header: "x-group", claim: "nested.group" }],
      timeout: "5s",
      spaceDelimitedClaims: ["scope"],
    }),
    want: [],
  },
  {
    name: "a rule without jwks or jwksUri (keys from the issuer's discovery) is valid",
    spec: rule({ jwksUri: undefined }),
    want: [],
  },

  // ---- issuer is required
  {
    name: "issuer required: empty issuer fails",
    spec: rule({ issuer: "" }),
    want: [err(at("issuer"), "issuer must not be empty")],
  },
  {
    name: "issuer required: issuer of the second rule is reported at index 1",
    spec: { jwtRules: [{ issuer: ISSUER }, { issuer: "" }] },
    want: [err(["spec", "jwtRules", 1, "issuer"], "issuer must not be empty")],
  },

  // ---- jwks and jwksUri exclude each other
  {
    name: "jwks and jwksUri exclude each other: both set fails",
    spec: rule({ jwks: JSON.stringify({ keys: [RSA_PUBLIC] }) }),
    want: [err(at("jwks"), "jwks and jwksUri exclude each other; set only one")],
  },
  {
    name: "jwks and jwksUri exclude each other: jwks alone passes",
    spec: rule({ jwksUri: undefined, jwks: JSON.stringify({ keys: [RSA_PUBLIC] }) }),
    want: [],
  },

  // ---- jwksUri is http(s)
  { name: "jwksUri http(s): https passes", spec: rule({ jwksUri: JWKS_URI }), want: [] },
  {
    name: "jwksUri http(s): http with a port passes",
    spec: rule({ jwksUri: "http://keys.local:8080/jwks" }),
    want: [],
  },
  {
    name: "jwksUri http(s): ftp scheme fails",
    spec: rule({ jwksUri: "ftp://issuer.example.com/jwks.json" }),
    want: [err(at("jwksUri"), 'URI scheme "ftp" is not supported; use http or https')],
  },
  {
    name: "jwksUri http(s): file scheme fails",
    spec: rule({ jwksUri: "file:///etc/jwks.json" }),
    want: [err(at("jwksUri"), 'URI scheme "file" is not supported')],
  },
  {
    name: "jwksUri http(s): a relative path is not a valid URL",
    spec: rule({ jwksUri: "/jwks.json" }),
    want: [err(at("jwksUri"), '"/jwks.json" is not a valid URL')],
  },
  {
    name: "jwksUri http(s): https:// without host is not a valid URL",
    spec: rule({ jwksUri: "https://" }),
    want: [err(at("jwksUri"), "is not a valid URL")],
  },
  {
    // The "jwksUri has no host" rule: an empty authority must be rejected, not read as host "jwks.json".
    name: "jwksUri http(s): https:///jwks.json (empty host) fails with no host",
    spec: rule({ jwksUri: "https:///jwks.json" }),
    want: [err(at("jwksUri"), "jwksUri has no host")],
  },

  // ---- jwksUri at most 2048 characters
  {
    name: "jwksUri length: 2048 characters passes",
    spec: rule({ jwksUri: uriOfLength(MAX_JWKS_URI_LENGTH) }),
    want: [],
  },
  {
    name: "jwksUri length: 2049 characters fails",
    spec: rule({ jwksUri: uriOfLength(MAX_JWKS_URI_LENGTH + 1) }),
    want: [err(at("jwksUri"), "jwksUri is 2049 characters; the limit is 2048")],
  },

  // ---- inline jwks
  {
    name: "jwks malformed JSON fails",
    spec: rule({ jwksUri: undefined, jwks: "{keys: [" }),
    want: [err(at("jwks"), "jwks is not JSON")],
  },
  {
    name: "jwks that is JSON but not a key set fails",
    spec: rule({ jwksUri: undefined, jwks: '"just a string"' }),
    want: [err(at("jwks"), 'jwks must be a JSON Web Key Set: an object with a "keys" list')],
  },
  {
    name: "jwks key without kty fails",
    spec: rule({ jwksUri: undefined, jwks: JSON.stringify({ keys: [RSA_PUBLIC, { n: "abc", e: "AQAB" }] }) }),
    want: [err(at("jwks"), 'jwks key 1 has no "kty"')],
  },
  {
    name: "jwks with private key warns (RSA key with d)",
    spec: rule({ jwksUri: undefined, jwks: JSON.stringify({ keys: [{ ...RSA_PUBLIC, d: "secret" }] }) }),
    want: [warn(at("jwks"), "jwks key 0 contains private or symmetric key material")],
  },
  {
    name: "jwks with private key warns (symmetric oct key)",
    spec: rule({
      jwksUri: undefined,
      jwks: JSON.stringify({ keys: [RSA_PUBLIC, { kty: "oct", k: "c2VjcmV0" }] }),
    }),
    want: [warn(at("jwks"), "jwks key 1 contains private or symmetric key material")],
  },
  {
    name: "jwks with public EC key passes",
    spec: rule({
      jwksUri: undefined,
      jwks: JSON.stringify({
        keys: [{
          kty: "EC",
          crv: "P-256",
          x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
          y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        }],
      }),
    }),
    want: [],
  },

  // ---- empty values in audiences / fromHeaders / fromParams / fromCookies
  {
    name: "audiences empty value fails",
    spec: rule({ audiences: ["api", ""] }),
    want: [err(at("audiences", 1), "audience must not be empty")],
  },
  {
    name: "fromHeaders empty name fails",
    spec: rule({ fromHeaders: [{ name: "", prefix: "Bearer " }] }),
    want: [err(at("fromHeaders", 0, "name"), "header name must not be empty")],
  },
  {
    name: "fromParams empty value fails",
    spec: rule({ fromParams: ["token", ""] }),
    want: [err(at("fromParams", 1), "query parameter name must not be empty")],
  },
  {
    name: "fromCookies empty value fails",
    spec: rule({ fromCookies: [""] }),
    want: [err(at("fromCookies", 0), "cookie name must not be empty")],
  },

  // ---- outputClaimToHeaders
  {
    name: "outputClaimToHeaders empty claim fails",
    spec: rule({ outputClaimToHeaders: [{ header: "x-sub", claim: "" }] }),
    want: [err(at("outputClaimToHeaders", 0, "claim"), "claim must not be empty")],
  },
  {
    name: "outputClaimToHeaders empty header fails",
    spec: rule({ outputClaimToHeaders: [{ header: "", claim: "sub" }] }),
    want: [err(at("outputClaimToHeaders", 0, "header"), "header must not be empty")],
  },
  {
    name: "outputClaimToHeaders invalid header name fails",
    spec: rule({
      outputClaimToHeaders: [{ header: "x-sub", claim: "sub" }, { header: "x sub", claim: "sub" }],
    }),
    want: [err(at("outputClaimToHeaders", 1, "header"), '"x sub" is not a valid header name')],
  },
  {
    name: "outputClaimToHeaders pseudo-header :authority fails",
    spec: rule({ outputClaimToHeaders: [{ header: ":authority", claim: "sub" }] }),
    want: [err(at("outputClaimToHeaders", 0, "header"), '":authority" is not a valid header name')],
  },

  // ---- outputPayloadToHeader
  {
    name: "outputPayloadToHeader valid header name passes",
    spec: rule({ outputPayloadToHeader: "x-jwt-payload" }),
    want: [],
  },
  {
    name: "outputPayloadToHeader header name with a space fails",
    spec: rule({ outputPayloadToHeader: "x jwt" }),
    want: [err(at("outputPayloadToHeader"), '"x jwt" is not a valid header name')],
  },
  {
    name: "outputPayloadToHeader header name with a colon fails",
    spec: rule({ outputPayloadToHeader: "x-jwt:" }),
    want: [err(at("outputPayloadToHeader"), "is not a valid header name")],
  },
  {
    name: "outputPayloadToHeader empty fails",
    spec: rule({ outputPayloadToHeader: "" }),
    want: [err(at("outputPayloadToHeader"), '"" is not a valid header name')],
  },

  // ---- timeout durations
  ...["5s", "1m30s", "500ms", "1.5s", "2h"].map((timeout): Case => ({
    name: `timeout duration: "${timeout}" passes`,
    spec: rule({ timeout }),
    want: [],
  })),
  ...["5", "abc", "5 s", "s"].map((timeout): Case => ({
    name: `timeout duration: "${timeout}" fails`,
    spec: rule({ timeout }),
    want: [err(at("timeout"), `"${timeout}" is not a duration; write a number with a unit`)],
  })),
  ...["0s", "0ms", "0m0s", "500us", "-5s"].map((timeout): Case => ({
    name: `timeout duration: "${timeout}" fails (under 1ms, as Istio's ValidateDuration)`,
    spec: rule({ timeout }),
    want: [err(at("timeout"), `duration "${timeout}" must be at least 1ms`)],
  })),
  ...["1.0005s", "1500us"].map((timeout): Case => ({
    name: `timeout duration: "${timeout}" fails (not whole milliseconds)`,
    spec: rule({ timeout }),
    want: [err(at("timeout"), `duration "${timeout}" is finer than 1ms`)],
  })),

  // ---- every problem of a rule is reported at once
  {
    name: "several problems in one rule are all reported",
    spec: rule({ issuer: "", audiences: [""], fromParams: [""], timeout: "abc" }),
    want: [
      err(at("issuer"), "issuer must not be empty"),
      err(at("audiences", 0), "audience must not be empty"),
      err(at("fromParams", 0), "query parameter name must not be empty"),
      err(at("timeout"), "is not a duration"),
    ],
  },

  // ---- targetRef / targetRefs rejected
  {
    name: "targetRef rejected",
    spec: { targetRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }, jwtRules: [] },
    want: [err(["spec", "targetRef"], "targetRef is not supported")],
  },
  {
    name: "targetRefs rejected",
    spec: { targetRefs: [{ kind: "Service", name: "httpbin" }] },
    want: [err(["spec", "targetRefs"], "targetRefs is not supported")],
  },
  {
    name: "targetRef and targetRefs both rejected",
    spec: { targetRef: { kind: "Gateway", name: "gw" }, targetRefs: [] },
    want: [
      err(["spec", "targetRef"], "targetRef is not supported"),
      err(["spec", "targetRefs"], "targetRefs is not supported"),
    ],
  },

  // ---- workload selector
  {
    name: "selector empty key fails",
    spec: { selector: { matchLabels: { "": "httpbin" } } },
    want: [err(["spec", "selector", "matchLabels", ""], "empty label key is not allowed")],
  },
  {
    name: "selector wildcard fails",
    spec: { selector: { matchLabels: { app: "*" } } },
    want: [err(["spec", "selector", "matchLabels", "app"], "wildcards are not supported in selectors")],
  },
  {
    name: "selector without labels warns",
    spec: { selector: {} },
    want: [warn(["spec", "selector"], "workload selector has no labels")],
  },

  // ---- schema: required, unknown field, wrong type
  {
    name: "issuer required: missing issuer is a schema error",
    spec: { jwtRules: [{ jwksUri: JWKS_URI }] },
    want: [err(["spec", "jwtRules", 0, "issuer"], "required field is missing")],
  },
  {
    name: "schema unknown field: spec.jwt_rules fails",
    spec: { jwt_rules: [] },
    want: [err(["spec", "jwt_rules"], 'unknown field "jwt_rules"')],
  },
  {
    name: "schema unknown field: jwtRules[0].jwks_uri fails",
    spec: rule({ jwks_uri: JWKS_URI }),
    want: [err(at("jwks_uri"), 'unknown field "jwks_uri"')],
  },
  {
    name: "schema wrong type: jwtRules as a map fails",
    spec: { jwtRules: { issuer: ISSUER } },
    want: [err(["spec", "jwtRules"], "expected a list, got a map")],
  },
  {
    name: "schema wrong type: forwardOriginalToken as a string fails",
    spec: rule({ forwardOriginalToken: "yes" }),
    want: [err(at("forwardOriginalToken"), 'expected true or false, got the string "yes"')],
  },
];

for (const c of cases) {
  Deno.test(`RequestAuthentication: ${c.name}`, () => {
    assertFindings(validateResource(requestAuthentication, resource(c.spec)), c.want);
  });
}

interface FixtureCase {
  file: string;
}

const FIXTURES = new URL("../../../tests/fixtures/istio/", import.meta.url);

const fixtures: FixtureCase[] = [
  { file: "authn-policy/07_request_authentication_jwt_example_ingressgateway.yaml" },
  { file: "authz-jwt/01_request_authentication_jwt_example_httpbin_foo.yaml" },
];

for (const c of fixtures) {
  Deno.test(`RequestAuthentication: Istio fixture ${c.file} yields no findings`, async () => {
    const doc = parse(await Deno.readTextFile(new URL(c.file, FIXTURES)));
    assert.equal(doc.kind, "RequestAuthentication");
    assertFindings(validateResource(requestAuthentication, doc), []);
  });
}
