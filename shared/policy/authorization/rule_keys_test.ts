import assert from "node:assert/strict";
import type { AuthorizationRuleView } from "./policy_view.ts";
import { ruleKeys, workloadRuleKeys } from "./rule_keys.ts";

const keys = (rule: AuthorizationRuleView): string[] | undefined =>
  ruleKeys(rule, "foo")?.map((k) => `${k.kind}${k.scope === "" ? "" : `[${k.scope}]`}=${k.value}`);

/** [label, rule, keys (undefined: evaluated for every request)]. */
const CASES: [string, AuthorizationRuleView, string[] | undefined][] = [
  ["an empty rule has none", {}, undefined],
  ["exact principals", { from: [{ source: { principals: ["td/ns/a/sa/b", "td/ns/c/sa/d"] } }] }, [
    "principal=td/ns/a/sa/b",
    "principal=td/ns/c/sa/d",
  ]],
  ["principals x* and *x by the ends of the principal", {
    from: [{ source: { principals: ["td/ns/a/*", "*/sa/b"] } }],
  }, ["principalPrefix=td/ns/a/", "principalSuffix=/sa/b"]],
  ["principal * unkeys the field", { from: [{ source: { principals: ["td/ns/a/sa/b", "*"] } }] }, undefined],
  ["trust domains as the principal prefix <domain>/, a pattern by its head", {
    from: [{ source: { trustDomains: ["td", "c*l"] } }],
  }, ["principalPrefix=td/", "principalPrefix=c"]],
  ["trust domain * and *x have none", { from: [{ source: { trustDomains: ["*.example"] } }] }, undefined],
  [
    "source.trustDomain conditions",
    { when: [{ key: "source.trustDomain", values: ["td"] }] },
    ["principalPrefix=td/"],
  ],
  ["notPrincipals have none", { from: [{ source: { notPrincipals: ["td/ns/a/sa/b"] } }] }, undefined],
  ["namespaces without * or /", { from: [{ source: { namespaces: ["foo"] } }] }, ["namespace=foo"]],
  ["a namespace with / has none", { from: [{ source: { namespaces: ["foo/sa"] } }] }, undefined],
  ["one unkeyed source unkeys from", {
    from: [{ source: { principals: ["td/ns/a/sa/b"] } }, { source: { trustDomains: ["*"] } }],
  }, undefined],
  ["IP blocks by their first byte (prefix 8 to 15) or two bytes (16 and more)", {
    from: [{ source: { ipBlocks: ["10.0.0.0/8", "192.168.1.0/24", "::ffff:10.1.0.0/112"] } }],
  }, [
    `ip[sourceIp/8]=${4 * 256 + 10}`,
    `ip[sourceIp/16]=${4 * 65536 + 192 * 256 + 168}`,
    `ip[sourceIp/16]=${4 * 65536 + 10 * 256 + 1}`,
  ]],
  [
    "a block shorter than 8 bits has none",
    { when: [{ key: "destination.ip", values: ["0.0.0.0/0"] }] },
    undefined,
  ],
  [
    "remote IP conditions key the remote address",
    { when: [{ key: "remote.ip", values: ["2001:db8::/32"] }] },
    [
      `ip[remoteIp/16]=${16 * 65536 + 0x20 * 256 + 0x01}`,
    ],
  ],
  ["service accounts by their namespace, the policy's by default", {
    from: [{ source: { serviceAccounts: ["sleep", "bar/client"] } }],
  }, ["namespace=foo", "namespace=bar"]],
  ["a null source unkeys from", { from: [{ source: null }] }, undefined],
  ["keys of every source", {
    from: [{ source: { principals: ["td/ns/a/sa/b"] } }, { source: { namespaces: ["x"] } }],
  }, ["principal=td/ns/a/sa/b", "namespace=x"]],
  ["JWT principals split at the last /", { from: [{ source: { requestPrincipals: ["https://i/x/sub"] } }] }, [
    "requestPrincipal[https://i/x]=sub",
  ]],
  ["a JWT principal without /", { from: [{ source: { requestPrincipals: ["iss"] } }] }, [
    "requestPrincipal[iss]=",
  ]],
  ["JWT principals iss/* by the issuer, */sub by the subject", {
    from: [{ source: { requestPrincipals: ["https://i/x/*", "*/sub", "*i/sub"] } }],
  }, ["requestIssuer=https://i/x", "requestSubject=sub"]],
  ["JWT principals x* and *x without / have none", {
    from: [{ source: { requestPrincipals: ["https://i/x/*", "iss*"] } }],
  }, undefined],
  ["a JWT principal * has none", { when: [{ key: "request.auth.principal", values: ["*"] }] }, undefined],
  ["paths: exact, prefix, suffix, template head", {
    to: [{ operation: { paths: ["/a", "/b/*", "*.js", "/api/{*}/x"] } }],
  }, ["path=/a", "pathPrefix=/b/", "pathSuffix=.js", "pathPrefix=/api/"]],
  ["path * and a template without head have none", { to: [{ operation: { paths: ["{**}"] } }] }, undefined],
  ["hosts in lower case", { to: [{ operation: { hosts: ["HTTPBIN.foo"] } }] }, ["host=httpbin.foo"]],
  ["hosts x* and *x by the ends of the Host, in lower case", {
    to: [{ operation: { hosts: ["*.Foo.svc", "HttpBin*"] } }],
  }, ["hostSuffix=.foo.svc", "hostPrefix=httpbin"]],
  ["host * has none", { to: [{ operation: { hosts: ["*"] } }] }, undefined],
  ["exact SNI conditions", { when: [{ key: "connection.sni", values: ["a.example"] }] }, ["sni=a.example"]],
  ["SNI *x has none", { when: [{ key: "connection.sni", values: ["*.example"] }] }, undefined],
  ["the cheapest field of an operation", { to: [{ operation: { methods: ["GET"], ports: ["80"] } }] }, [
    "port=80",
  ]],
  ["the cheapest part of a rule", {
    to: [{ operation: { methods: ["GET"] } }],
    when: [{ key: "request.headers[X-Tenant]", values: ["t1"] }],
  }, ["header[x-tenant]=t1"]],
  ["conditions of keyed keys", { when: [{ key: "source.principal", values: ["td/ns/a/sa/b"] }] }, [
    "principal=td/ns/a/sa/b",
  ]],
  ["notValues have none", { when: [{ key: "destination.port", notValues: ["80"] }] }, undefined],
  ["claim values, by the claim's path", { when: [{ key: "request.auth.claims[a][b]", values: ["g"] }] }, [
    'claim[["a","b"]]=g',
  ]],
  ["audiences are the aud claim", { when: [{ key: "request.auth.audiences", values: ["app"] }] }, [
    'claim[["aud"]]=app',
  ]],
  [
    "a wildcard claim value has none",
    { when: [{ key: "request.auth.presenter", values: ["front*"] }] },
    undefined,
  ],
  ["repeated keys are filed once", {
    to: [{ operation: { paths: ["/a"] } }, { operation: { paths: ["/a"] } }],
  }, [
    "path=/a",
  ]],
];

for (const [label, rule, want] of CASES) {
  Deno.test(`ruleKeys: ${label}`, () => assert.deepEqual(keys(rule), want));
}

Deno.test("workloadRuleKeys: rules that share a key are filed under their rarer keys", () => {
  const rule = (i: number): AuthorizationRuleView => ({
    from: [{ source: { principals: [`*/sa/robot${i}`] } }],
    to: [{ operation: { paths: ["/admin/*"] } }],
  });
  const kinds = (rules: AuthorizationRuleView[]) =>
    workloadRuleKeys(rules.map((r) => [r, "foo"] as const)).map((ks) =>
      ks?.map((k) => `${k.kind}=${k.value}`)
    );
  assert.deepEqual(keys(rule(0)), ["pathPrefix=/admin/"]);
  assert.deepEqual(kinds([rule(0)]), [["pathPrefix=/admin/"]]);
  assert.deepEqual(kinds([rule(0), rule(1), {}]), [
    ["principalSuffix=/sa/robot0"],
    ["principalSuffix=/sa/robot1"],
    undefined,
  ]);
  // Its own keys by KEY_COST stay (the principal), though another rule shares its path.
  const exact = { ...rule(2), from: [{ source: { principals: ["td/ns/a/sa/b"] } }] };
  assert.deepEqual(kinds([exact, rule(3)]), [["principal=td/ns/a/sa/b"], ["principalSuffix=/sa/robot3"]]);
});
