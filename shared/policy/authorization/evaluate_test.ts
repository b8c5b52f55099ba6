import assert from "node:assert/strict";
import { authorize, compileAuthorization } from "./evaluate.ts";
import type { AuthorizationPolicyView, AuthorizationRuleView } from "./policy_view.ts";
import type { AuthorizationRequest } from "./request.ts";

const SLEEP = "spiffe://cluster.local/ns/foo/sa/sleep";
const base: AuthorizationRequest = {
  method: "GET",
  path: "/headers",
  host: "httpbin.foo:8000",
  port: 8000,
  sourcePrincipal: SLEEP,
  sourceIp: "10.0.0.5",
  destinationIp: "10.0.0.9",
};
const JWT = {
  requestPrincipal: "testing@secure.istio.io/testing@secure.istio.io",
  claims: {
    iss: "testing@secure.istio.io",
    sub: "testing@secure.istio.io",
    aud: ["app", "web"],
    azp: "frontend",
    groups: ["group1", "group2"],
    scope: ["read", "write"],
    nested: { key1: ["value1"], level: "gold" },
  },
};

const rule = (r: AuthorizationRuleView) => [r];
const deny = (rules: AuthorizationRuleView[], name = "deny"): AuthorizationPolicyView => ({
  namespace: "foo",
  name,
  action: "DENY",
  rules,
});
const allow = (rules: AuthorizationRuleView[] | undefined, name = "allow"): AuthorizationPolicyView => ({
  namespace: "foo",
  name,
  action: "ALLOW",
  rules,
});
const src = (s: Record<string, string[]>): AuthorizationRuleView => ({ from: [{ source: s }] });
const op = (o: Record<string, string[]>): AuthorizationRuleView => ({ to: [{ operation: o }] });
const when = (key: string, values?: string[], notValues?: string[]): AuthorizationRuleView => ({
  when: [{ key, values, notValues }],
});

/** [name, policies, request overrides, allowed] — for a DENY policy, "matches" means denied. */
const cases: [string, AuthorizationPolicyView[], Partial<AuthorizationRequest>, boolean][] = [
  ["no policy allows", [], {}, true],
  ["ALLOW spec {} (no rules) denies all", [allow(undefined)], {}, false],
  ["ALLOW with an empty rule allows all", [allow([{}])], {}, true],
  ["DENY with an empty rule denies all", [deny([{}])], {}, false],
  ["DENY wins over ALLOW", [allow([{}]), deny([{}])], {}, false],
  ["AUDIT alone changes nothing", [{ namespace: "foo", name: "a", action: "AUDIT", rules: [{}] }], {}, true],
  // Seed: DENY notRequestPrincipals ["*"] makes tokens mandatory.
  [
    "seed: notRequestPrincipals * denies tokenless",
    [deny(rule(src({ notRequestPrincipals: ["*"] })))],
    {},
    false,
  ],
  [
    "seed: notRequestPrincipals * passes a token",
    [deny(rule(src({ notRequestPrincipals: ["*"] })))],
    JWT,
    true,
  ],
  [
    "seed: ... plus paths: other paths pass tokenless",
    [deny(
      rule({
        from: [{ source: { notRequestPrincipals: ["*"] } }],
        to: [{ operation: { paths: ["/headers"] } }],
      }),
    )],
    { path: "/ip" },
    true,
  ],
  [
    "seed: ... plus paths: the listed path is denied tokenless",
    [deny(
      rule({
        from: [{ source: { notRequestPrincipals: ["*"] } }],
        to: [{ operation: { paths: ["/headers"] } }],
      }),
    )],
    { path: "/headers?x=1" },
    false,
  ],
  // principals
  ["principals exact", [allow(rule(src({ principals: ["cluster.local/ns/foo/sa/sleep"] })))], {}, true],
  ["principals other", [allow(rule(src({ principals: ["cluster.local/ns/foo/sa/other"] })))], {}, false],
  ["principals prefix", [allow(rule(src({ principals: ["cluster.local/ns/foo/*"] })))], {}, true],
  ["principals suffix", [allow(rule(src({ principals: ["*/sa/sleep"] })))], {}, true],
  [
    "principals * needs mTLS",
    [allow(rule(src({ principals: ["*"] })))],
    { sourcePrincipal: undefined },
    false,
  ],
  ["notPrincipals * matches plain text", [deny(rule(src({ notPrincipals: ["*"] })))], {
    sourcePrincipal: undefined,
  }, false],
  ["notPrincipals * passes mTLS", [deny(rule(src({ notPrincipals: ["*"] })))], {}, true],
  // namespaces, serviceAccounts, trustDomains
  ["namespaces", [allow(rule(src({ namespaces: ["foo"] })))], {}, true],
  ["namespaces other", [allow(rule(src({ namespaces: ["bar"] })))], {}, false],
  ["namespaces wildcard", [allow(rule(src({ namespaces: ["f*"] })))], {}, true],
  ["notNamespaces", [deny(rule(src({ notNamespaces: ["foo"] })))], {}, true],
  [
    "namespaces without mTLS",
    [allow(rule(src({ namespaces: ["foo"] })))],
    { sourcePrincipal: undefined },
    false,
  ],
  ["serviceAccounts ns/sa", [allow(rule(src({ serviceAccounts: ["foo/sleep"] })))], {}, true],
  [
    "serviceAccounts sa in the policy's namespace",
    [allow(rule(src({ serviceAccounts: ["sleep"] })))],
    {},
    true,
  ],
  ["serviceAccounts no suffix junk", [allow(rule(src({ serviceAccounts: ["foo/sle"] })))], {}, false],
  ["notServiceAccounts", [deny(rule(src({ notServiceAccounts: ["foo/sleep"] })))], {}, true],
  ["trustDomains exact", [allow(rule(src({ trustDomains: ["cluster.local"] })))], {}, true],
  ["trustDomains other", [allow(rule(src({ trustDomains: ["other.td"] })))], {}, false],
  ["trustDomains wildcard", [allow(rule(src({ trustDomains: ["*.local"] })))], {}, true],
  ["notTrustDomains", [deny(rule(src({ notTrustDomains: ["cluster.local"] })))], {}, true],
  // IPs
  ["ipBlocks CIDR", [allow(rule(src({ ipBlocks: ["10.0.0.0/24"] })))], {}, true],
  ["ipBlocks other", [allow(rule(src({ ipBlocks: ["10.0.1.0/24"] })))], {}, false],
  ["notIpBlocks", [deny(rule(src({ notIpBlocks: ["10.0.0.5"] })))], {}, true],
  ["remoteIpBlocks default to the peer", [allow(rule(src({ remoteIpBlocks: ["10.0.0.5"] })))], {}, true],
  [
    "remoteIpBlocks given",
    [allow(rule(src({ remoteIpBlocks: ["1.2.3.4"] })))],
    { remoteIp: "1.2.3.4" },
    true,
  ],
  [
    "notRemoteIpBlocks",
    [deny(rule(src({ notRemoteIpBlocks: ["1.2.3.0/24"] })))],
    { remoteIp: "1.2.3.4" },
    true,
  ],
  // request principals
  [
    "requestPrincipals exact",
    [allow(rule(src({ requestPrincipals: ["testing@secure.istio.io/testing@secure.istio.io"] })))],
    JWT,
    true,
  ],
  [
    "requestPrincipals iss/*",
    [allow(rule(src({ requestPrincipals: ["testing@secure.istio.io/*"] })))],
    JWT,
    true,
  ],
  [
    "requestPrincipals */sub",
    [allow(rule(src({ requestPrincipals: ["*/testing@secure.istio.io"] })))],
    JWT,
    true,
  ],
  ["requestPrincipals other issuer", [allow(rule(src({ requestPrincipals: ["other/*"] })))], JWT, false],
  ["requestPrincipals * without token", [allow(rule(src({ requestPrincipals: ["*"] })))], {}, false],
  [
    "requestPrincipals with an URL issuer",
    [allow(rule(src({ requestPrincipals: ["https://idp.example.com/a/user-1"] })))],
    { requestPrincipal: "https://idp.example.com/a/user-1" },
    true,
  ],
  // operations
  ["hosts case-insensitive", [allow(rule(op({ hosts: ["HTTPBIN.foo:8000"] })))], {}, true],
  [
    "hosts without port do not match a host with port",
    [allow(rule(op({ hosts: ["httpbin.foo"] })))],
    {},
    false,
  ],
  ["hosts wildcard", [allow(rule(op({ hosts: ["httpbin.foo*"] })))], {}, true],
  ["notHosts", [deny(rule(op({ notHosts: ["*.example.com"] })))], {}, false],
  ["ports", [allow(rule(op({ ports: ["8000"] })))], {}, true],
  ["ports other", [allow(rule(op({ ports: ["9000"] })))], {}, false],
  ["notPorts", [deny(rule(op({ notPorts: ["9000"] })))], {}, false],
  ["methods", [allow(rule(op({ methods: ["GET", "HEAD"] })))], {}, true],
  ["methods other", [allow(rule(op({ methods: ["POST"] })))], {}, false],
  ["notMethods", [deny(rule(op({ notMethods: ["GET"] })))], {}, true],
  ["paths exact", [allow(rule(op({ paths: ["/headers"] })))], {}, true],
  ["paths prefix", [allow(rule(op({ paths: ["/head*"] })))], {}, true],
  ["paths suffix", [allow(rule(op({ paths: ["*ers"] })))], {}, true],
  ["paths ignore the query", [allow(rule(op({ paths: ["/headers"] })))], { path: "/headers?a=b" }, true],
  ["paths are normalized", [deny(rule(op({ paths: ["/admin"] })))], { path: "/public/../admin" }, false],
  ["paths %2e normalized", [deny(rule(op({ paths: ["/admin"] })))], { path: "/x/%2e%2e/admin" }, false],
  ["paths backslash normalized", [deny(rule(op({ paths: ["/admin/x"] })))], { path: "/admin\\x" }, false],
  ["paths template {*}", [allow(rule(op({ paths: ["/api/{*}/info"] })))], { path: "/api/v1/info" }, true],
  ["paths template {**}", [allow(rule(op({ paths: ["/api/{**}"] })))], { path: "/api/v1/a/b" }, true],
  [
    "paths template no match",
    [allow(rule(op({ paths: ["/api/{*}/info"] })))],
    { path: "/api/a/b/info" },
    false,
  ],
  ["notPaths", [deny(rule(op({ notPaths: ["/healthz"] })))], { path: "/healthz" }, true],
  ["fields of an operation are ANDed", [allow(rule(op({ methods: ["GET"], paths: ["/ip"] })))], {}, false],
  ["values of a field are ORed", [allow(rule(op({ paths: ["/ip", "/headers"] })))], {}, true],
  [
    "any of several to entries",
    [allow(rule({ to: [{ operation: { paths: ["/ip"] } }, { operation: { paths: ["/headers"] } }] }))],
    {},
    true,
  ],
  [
    "from and to are ANDed",
    [allow(
      rule({ from: [{ source: { namespaces: ["bar"] } }], to: [{ operation: { paths: ["/headers"] } }] }),
    )],
    {},
    false,
  ],
  ["rules are ORed", [allow([op({ paths: ["/ip"] }), op({ paths: ["/headers"] })])], {}, true],
  // conditions
  ["request.headers exact", [allow(rule(when("request.headers[X-Token]", ["abc"])))], {
    headers: { "x-token": "abc" },
  }, true],
  ["request.headers absent", [allow(rule(when("request.headers[x-token]", ["abc"])))], {}, false],
  ["request.headers * is presence", [allow(rule(when("request.headers[x-token]", ["*"])))], {
    headers: { "x-token": "" },
  }, true],
  ["request.headers prefix", [allow(rule(when("request.headers[user-agent]", ["curl/*"])))], {
    headers: { "user-agent": "curl/7.88" },
  }, true],
  ["request.headers notValues", [deny(rule(when("request.headers[x-token]", undefined, ["abc"])))], {
    headers: { "x-token": "abc" },
  }, true],
  [
    "request.headers notValues on absent header",
    [deny(rule(when("request.headers[x-token]", undefined, ["abc"])))],
    {},
    false,
  ],
  ["source.ip", [allow(rule(when("source.ip", ["10.0.0.0/8"])))], {}, true],
  ["remote.ip", [allow(rule(when("remote.ip", ["10.0.0.5"])))], {}, true],
  ["source.namespace", [allow(rule(when("source.namespace", ["foo"])))], {}, true],
  ["source.principal", [allow(rule(when("source.principal", ["cluster.local/ns/foo/sa/sleep"])))], {}, true],
  ["source.serviceAccount", [allow(rule(when("source.serviceAccount", ["foo/sleep"])))], {}, true],
  ["source.trustDomain", [allow(rule(when("source.trustDomain", ["cluster.local"])))], {}, true],
  [
    "request.auth.principal",
    [allow(rule(when("request.auth.principal", ["testing@secure.istio.io/*"])))],
    JWT,
    true,
  ],
  ["request.auth.audiences (list claim)", [allow(rule(when("request.auth.audiences", ["web"])))], JWT, true],
  ["request.auth.audiences other", [allow(rule(when("request.auth.audiences", ["admin"])))], JWT, false],
  ["request.auth.presenter", [allow(rule(when("request.auth.presenter", ["front*"])))], JWT, true],
  ["request.auth.claims list", [allow(rule(when("request.auth.claims[groups]", ["group1"])))], JWT, true],
  [
    "request.auth.claims string",
    [allow(rule(when("request.auth.claims[iss]", ["testing@secure.istio.io"])))],
    JWT,
    true,
  ],
  [
    "request.auth.claims nested",
    [allow(rule(when("request.auth.claims[nested][key1]", ["value1"])))],
    JWT,
    true,
  ],
  [
    "request.auth.claims nested string",
    [allow(rule(when("request.auth.claims[nested][level]", ["gold"])))],
    JWT,
    true,
  ],
  [
    "request.auth.claims without token",
    [allow(rule(when("request.auth.claims[groups]", ["group1"])))],
    {},
    false,
  ],
  [
    "request.auth.claims notValues",
    [deny(rule(when("request.auth.claims[scope]", undefined, ["admin"])))],
    JWT,
    false,
  ],
  ["destination.ip", [allow(rule(when("destination.ip", ["10.0.0.9"])))], {}, true],
  ["destination.port", [allow(rule(when("destination.port", ["8000"])))], {}, true],
  ["destination.port other", [allow(rule(when("destination.port", ["80"])))], {}, false],
  ["connection.sni", [allow(rule(when("connection.sni", ["*.foo.svc"])))], { sni: "httpbin.foo.svc" }, true],
  ["connection.sni absent", [allow(rule(when("connection.sni", ["*"])))], {}, false],
  [
    "when conditions are ANDed",
    [allow(
      rule({
        when: [{ key: "source.namespace", values: ["foo"] }, { key: "destination.port", values: ["1"] }],
      }),
    )],
    {},
    false,
  ],
];

for (const [name, policies, overrides, want] of cases) {
  Deno.test(`authorize: ${name}`, () => {
    const d = authorize(policies, { ...base, ...overrides });
    assert.equal(d.allowed, want, d.reason);
  });
}

Deno.test("authorize names the deciding DENY policy and rule, in namespace/name order", () => {
  const d = authorize(
    [
      deny([op({ paths: ["/ip"] }), op({ paths: ["/headers"] })], "zz"),
      deny([op({ paths: ["/nope"] }), {}], "aa"),
    ],
    base,
  );
  assert.deepEqual(
    { allowed: d.allowed, policy: d.policy, action: d.action, ruleIndex: d.ruleIndex, reason: d.reason },
    {
      allowed: false,
      policy: { namespace: "foo", name: "aa" },
      action: "DENY",
      ruleIndex: 1,
      reason: "denied by DENY policy foo/aa rule 1",
    },
  );
});

Deno.test("authorize names the matching ALLOW rule, and the ALLOW policies when none matched", () => {
  const a = authorize([allow([op({ paths: ["/ip"] }), op({ paths: ["/headers"] })])], base);
  assert.equal(a.reason, "allowed by ALLOW policy foo/allow rule 1");
  assert.equal(a.ruleIndex, 1);
  const b = authorize([allow([op({ paths: ["/ip"] })], "b"), allow(undefined, "a")], base);
  assert.equal(b.allowed, false);
  assert.equal(b.policy, undefined);
  assert.equal(b.reason, "denied: no rule of ALLOW policies foo/a, foo/b matched");
  assert.equal(authorize([], base).reason, "allowed: no ALLOW policy applies");
});

Deno.test("authorize reports the first AUDIT match without changing the decision", () => {
  const d = authorize([{
    namespace: "foo",
    name: "audit",
    action: "AUDIT",
    rules: [op({ paths: ["/x"] }), {}],
  }], base);
  assert.equal(d.allowed, true);
  assert.deepEqual(d.audit, { policy: { namespace: "foo", name: "audit" }, ruleIndex: 1 });
});

Deno.test("a decoded mesh.v1.Authorization (empty lists, null messages) evaluates like YAML", () => {
  const decoded = {
    namespace: "foo",
    name: "deny",
    action: "DENY",
    scope: "NAMESPACE",
    rulesAbsent: false,
    rules: [{
      from: [{ source: { principals: [], notRequestPrincipals: ["*"], namespaces: [] } }],
      to: [{ operation: { paths: ["/headers"], methods: [], hosts: [] } }],
      when: [],
    }],
  };
  assert.equal(authorize([decoded], base).allowed, false);
  assert.equal(authorize([decoded], { ...base, ...JWT }).allowed, true);
  assert.equal(authorize([decoded], { ...base, path: "/ip" }).allowed, true);
});

Deno.test("compileAuthorization refuses CUSTOM as not supported yet, naming the policy", () => {
  assert.throws(
    () => compileAuthorization([{ namespace: "foo", name: "ext", action: "CUSTOM", rules: [{}] }]),
    /AuthorizationPolicy foo\/ext: action CUSTOM \(external authorization\) is not supported yet/,
  );
});

Deno.test("compileAuthorization names the policy, rule and field of a bad value", () => {
  assert.throws(
    () => compileAuthorization([allow([{}, src({ ipBlocks: ["10.0.0.0/99"] })])]),
    /AuthorizationPolicy foo\/allow: spec\.rules\[1\]\.from\[0\]\.source\.ipBlocks: "10\.0\.0\.0\/99"/,
  );
  assert.throws(
    () => compileAuthorization([allow(rule(when("destination.name", ["x"])))]),
    /spec\.rules\[0\]\.when\[0\]: condition key "destination.name" is not supported/,
  );
});

Deno.test("compileAuthorization lists the header names conditions read", () => {
  const c = compileAuthorization([
    allow([when("request.headers[X-Token]", ["a"]), when("request.headers[user-agent]", ["*"])]),
  ]);
  assert.deepEqual([...c.headerNames].sort(), ["user-agent", "x-token"]);
});
