/**
 * Every source field, operation field and condition key against requests it must match and
 * requests it must not match (the way ztunnel's `rbac_test!` checks each field with both
 * outcomes), in its plain and its `not` form, under ALLOW and DENY. The non-matching requests
 * carry the value in a neighbouring attribute (the destination IP for `source.ip`, `azp` for
 * `audiences`, ...), so a matcher that reads the wrong attribute fails. tests/mutation/run.ts
 * plants such bugs and checks that these rows catch them.
 */
import assert from "node:assert/strict";
import {
  type AuthorizationPolicyView,
  type AuthorizationRuleView,
  authorize,
  compileAuthorization,
} from "./evaluate.ts";
import type { AuthorizationRequest } from "./request.ts";
import {
  BRACKETED_CONDITION_KEYS,
  PLAIN_CONDITION_KEYS,
} from "../../api/schemas/authorization_conditions.ts";

const base: AuthorizationRequest = {
  method: "GET",
  path: "/headers",
  host: "httpbin.foo:8000",
  port: 8000,
  sourcePrincipal: "spiffe://cluster.local/ns/foo/sa/sleep",
  sourceIp: "10.0.0.5",
  destinationIp: "10.0.0.9",
};
const ISS = "testing@secure.istio.io";

type Overrides = Partial<AuthorizationRequest>;
/** A request: a label for the test name and what differs from `base`. */
type Row = [label: string, overrides: Overrides];

const peer = (id: string | undefined): Row => [`peer ${id ?? "plain text"}`, { sourcePrincipal: id }];
const plainText: Row = peer(undefined);
/** A verified token with these claims (`iss` and `sub` default to the test issuer). */
const token = (label: string, claims: Record<string, unknown> = {}): Row => {
  const c = { iss: ISS, sub: ISS, aud: ["app", "web"], azp: "frontend", ...claims };
  return [`token ${label}`, { requestPrincipal: `${c.iss}/${c.sub}`, claims: c }];
};
const noToken: Row = ["no token", {}];

/** A field or key, its rule in plain and `not` form, and requests on either side. */
interface FieldCase {
  name: string;
  rule: AuthorizationRuleView;
  /** The same values in the `not` field, or undefined when the rule has no such form. */
  notRule?: AuthorizationRuleView;
  matching: Row[];
  notMatching: Row[];
}

/** `principals` → `notPrincipals`. */
const notOf = (name: string) => `not${name[0].toUpperCase()}${name.slice(1)}`;
const source = (name: string, values: string[]) => ({
  rule: { from: [{ source: { [name]: values } }] },
  notRule: { from: [{ source: { [notOf(name)]: values } }] },
});
const operation = (name: string, values: string[]) => ({
  rule: { to: [{ operation: { [name]: values } }] },
  notRule: { to: [{ operation: { [notOf(name)]: values } }] },
});
const condition = (key: string, values: string[]) => ({
  rule: { when: [{ key, values }] },
  notRule: { when: [{ key, notValues: values }] },
});

const PRINCIPAL_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/foo/sa/sleep")] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/foo/sa/other"),
    peer("spiffe://other.td/ns/foo/sa/sleep"),
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    plainText,
  ],
};
const NAMESPACE_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/foo/sa/other")] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    peer("spiffe://cluster.local/ns/bar/sa/foo"),
    peer("spiffe://cluster.local/ns/foobar/sa/sleep"),
    plainText,
  ],
};
const SERVICE_ACCOUNT_ROWS = {
  matching: [["base", {}]] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    peer("spiffe://cluster.local/ns/foo/sa/sleepy"),
    peer("spiffe://cluster.local/ns/foo/sa/other"),
    plainText,
  ],
};
const TRUST_DOMAIN_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/bar/sa/x")] as Row[],
  notMatching: [
    peer("spiffe://cluster.localhost/ns/foo/sa/sleep"),
    peer("spiffe://other.td/ns/foo/sa/sleep"),
    plainText,
  ],
};
/** The peer is 10.0.0.5; the others hold 10.0.0.5 in turn where the peer does not. */
const SOURCE_IP_ROWS = {
  matching: [["base", {}], ["peer 10.0.0.5, remote 1.2.3.4", { remoteIp: "1.2.3.4" }]] as Row[],
  notMatching: [
    ["peer 10.0.0.6", { sourceIp: "10.0.0.6" }],
    ["peer 10.0.0.6, destination 10.0.0.5", { sourceIp: "10.0.0.6", destinationIp: "10.0.0.5" }],
    ["peer 10.0.0.6, remote 10.0.0.5", { sourceIp: "10.0.0.6", remoteIp: "10.0.0.5" }],
    ["no peer address", { sourceIp: undefined }],
  ] as Row[],
};
const REMOTE_IP_ROWS = {
  matching: [
    ["remote 1.2.3.4", { remoteIp: "1.2.3.4" }],
    ["no remote, peer 1.2.3.4 (the default)", { sourceIp: "1.2.3.4" }],
  ] as Row[],
  notMatching: [
    ["base (peer 10.0.0.5)", {}],
    ["peer 1.2.3.4, remote 5.6.7.8", { sourceIp: "1.2.3.4", remoteIp: "5.6.7.8" }],
    ["destination 1.2.3.4", { destinationIp: "1.2.3.4" }],
  ] as Row[],
};
const REQUEST_PRINCIPAL_ROWS = {
  matching: [token("of the issuer")],
  notMatching: [
    noToken,
    token("of another issuer", { iss: "other" }),
    token("of another subject", { sub: "someone" }),
  ],
};

const FIELDS: FieldCase[] = [
  // Sources.
  { name: "principals", ...source("principals", ["cluster.local/ns/foo/sa/sleep"]), ...PRINCIPAL_ROWS },
  {
    name: "principals *",
    ...source("principals", ["*"]),
    matching: [["base", {}]],
    notMatching: [plainText],
  },
  {
    name: "requestPrincipals",
    ...source("requestPrincipals", [`${ISS}/${ISS}`]),
    ...REQUEST_PRINCIPAL_ROWS,
  },
  {
    name: "requestPrincipals *",
    ...source("requestPrincipals", ["*"]),
    matching: [token("of the issuer"), token("of another issuer", { iss: "other" })],
    notMatching: [noToken],
  },
  { name: "namespaces", ...source("namespaces", ["foo"]), ...NAMESPACE_ROWS },
  {
    name: "namespaces f*",
    ...source("namespaces", ["f*"]),
    matching: [["base", {}], peer("spiffe://cluster.local/ns/foobar/sa/x")],
    notMatching: [peer("spiffe://cluster.local/ns/bar/sa/foo"), plainText],
  },
  { name: "serviceAccounts ns/sa", ...source("serviceAccounts", ["foo/sleep"]), ...SERVICE_ACCOUNT_ROWS },
  {
    name: "serviceAccounts sa (the policy's namespace)",
    ...source("serviceAccounts", ["sleep"]),
    ...SERVICE_ACCOUNT_ROWS,
  },
  { name: "trustDomains", ...source("trustDomains", ["cluster.local"]), ...TRUST_DOMAIN_ROWS },
  {
    name: "trustDomains *",
    ...source("trustDomains", ["*"]),
    matching: [["base", {}]],
    notMatching: [plainText],
  },
  { name: "ipBlocks", ...source("ipBlocks", ["10.0.0.5"]), ...SOURCE_IP_ROWS },
  {
    name: "ipBlocks CIDR",
    ...source("ipBlocks", ["10.0.0.4/30"]),
    matching: [["base", {}], ["peer 10.0.0.7", { sourceIp: "10.0.0.7" }]],
    notMatching: [["peer 10.0.0.3", { sourceIp: "10.0.0.3" }], ["peer 10.0.0.8", { sourceIp: "10.0.0.8" }]],
  },
  { name: "remoteIpBlocks", ...source("remoteIpBlocks", ["1.2.3.4"]), ...REMOTE_IP_ROWS },
  // Operations.
  {
    name: "hosts",
    ...operation("hosts", ["httpbin.foo:8000"]),
    matching: [["base", {}], ["upper case", { host: "HTTPBIN.FOO:8000" }]],
    notMatching: [["another host", { host: "httpbin.bar:8000" }], ["no host", { host: undefined }]],
  },
  {
    name: "ports",
    ...operation("ports", ["8000"]),
    matching: [["base", {}]],
    notMatching: [["port 9000", { port: 9000 }], ["port 80", { port: 80 }]],
  },
  {
    name: "methods",
    ...operation("methods", ["GET"]),
    matching: [["base", {}]],
    notMatching: [["POST", { method: "POST" }], ["get (methods are case-sensitive)", { method: "get" }]],
  },
  {
    name: "paths",
    ...operation("paths", ["/headers"]),
    matching: [["base", {}], ["with a query", { path: "/headers?a=b" }]],
    notMatching: [["/ip", { path: "/ip" }], ["/headers/x", { path: "/headers/x" }]],
  },
  // Conditions.
  {
    name: "request.headers[x-token]",
    ...condition("request.headers[x-token]", ["abc"]),
    matching: [["x-token: abc", { headers: { "x-token": "abc" } }]],
    notMatching: [
      ["x-token: abd", { headers: { "x-token": "abd" } }],
      ["no x-token, x-other: abc", { headers: { "x-other": "abc" } }],
      ["no headers", {}],
    ],
  },
  { name: "source.ip", ...condition("source.ip", ["10.0.0.5"]), ...SOURCE_IP_ROWS },
  { name: "remote.ip", ...condition("remote.ip", ["1.2.3.4"]), ...REMOTE_IP_ROWS },
  {
    name: "destination.ip",
    ...condition("destination.ip", ["10.0.0.9"]),
    matching: [["base", {}]],
    notMatching: [
      ["destination 10.0.0.8", { destinationIp: "10.0.0.8" }],
      ["destination 10.0.0.8, peer 10.0.0.9", { destinationIp: "10.0.0.8", sourceIp: "10.0.0.9" }],
    ],
  },
  {
    name: "destination.port",
    ...condition("destination.port", ["8000"]),
    matching: [["base", {}]],
    notMatching: [["port 9000", { port: 9000 }]],
  },
  { name: "source.namespace", ...condition("source.namespace", ["foo"]), ...NAMESPACE_ROWS },
  {
    name: "source.principal",
    ...condition("source.principal", ["cluster.local/ns/foo/sa/sleep"]),
    ...PRINCIPAL_ROWS,
  },
  {
    name: "source.serviceAccount",
    ...condition("source.serviceAccount", ["foo/sleep"]),
    ...SERVICE_ACCOUNT_ROWS,
  },
  { name: "source.trustDomain", ...condition("source.trustDomain", ["cluster.local"]), ...TRUST_DOMAIN_ROWS },
  {
    name: "request.auth.principal",
    ...condition("request.auth.principal", [`${ISS}/${ISS}`]),
    ...REQUEST_PRINCIPAL_ROWS,
  },
  {
    name: "request.auth.audiences",
    ...condition("request.auth.audiences", ["web"]),
    matching: [token("aud [app, web]"), token("aud web", { aud: "web" })],
    notMatching: [noToken, token("aud [app], azp web", { aud: ["app"], azp: "web" })],
  },
  {
    name: "request.auth.presenter",
    ...condition("request.auth.presenter", ["frontend"]),
    matching: [token("azp frontend")],
    notMatching: [noToken, token("azp backend, aud [frontend]", { azp: "backend", aud: ["frontend"] })],
  },
  {
    name: "request.auth.claims[groups]",
    ...condition("request.auth.claims[groups]", ["group1"]),
    matching: [token("groups [group1, group2]", { groups: ["group1", "group2"] })],
    notMatching: [
      noToken,
      token("groups [group3]", { groups: ["group3"] }),
      token("roles [group1]", { roles: ["group1"] }),
    ],
  },
  {
    name: "request.auth.claims[iss] (a string claim)",
    ...condition("request.auth.claims[iss]", [ISS]),
    matching: [token("of the issuer")],
    notMatching: [noToken, token("of another issuer", { iss: "other" })],
  },
  {
    name: "request.auth.claims[nested][level]",
    ...condition("request.auth.claims[nested][level]", ["gold"]),
    matching: [token("nested.level gold", { nested: { level: "gold" } })],
    notMatching: [
      token("nested.level silver", { nested: { level: "silver" } }),
      token("level gold at the top", { level: "gold", nested: { other: "gold" } }),
    ],
  },
  {
    name: "connection.sni",
    ...condition("connection.sni", ["httpbin.foo.svc"]),
    matching: [["sni httpbin.foo.svc", { sni: "httpbin.foo.svc" }]],
    notMatching: [["sni other.foo.svc", { sni: "other.foo.svc" }], ["no sni", {}]],
  },
  // Each IP attribute is read apart, whatever was read before it.
  {
    name: "ipBlocks, remoteIpBlocks and destination.ip in one rule",
    rule: {
      from: [{ source: { ipBlocks: ["10.0.0.5"], remoteIpBlocks: ["1.2.3.4"] } }],
      when: [{ key: "destination.ip", values: ["10.0.0.9"] }],
    },
    matching: [["remote 1.2.3.4", { remoteIp: "1.2.3.4" }]],
    notMatching: [
      ["base (remote is the peer)", {}],
      ["remote 1.2.3.4, destination 10.0.0.8", { remoteIp: "1.2.3.4", destinationIp: "10.0.0.8" }],
    ],
  },
  // Values and notValues together: the field must match a value and no notValue.
  {
    name: "principals * and notPrincipals sleep",
    rule: { from: [{ source: { principals: ["*"], notPrincipals: ["cluster.local/ns/foo/sa/sleep"] } }] },
    matching: [peer("spiffe://cluster.local/ns/foo/sa/other")],
    notMatching: [["base", {}], plainText],
  },
  {
    name: "source.namespace values and notValues",
    rule: { when: [{ key: "source.namespace", values: ["f*"], notValues: ["foo"] }] },
    matching: [peer("spiffe://cluster.local/ns/fox/sa/sleep")],
    notMatching: [["base", {}], peer("spiffe://cluster.local/ns/bar/sa/sleep")],
  },
];

const policy = (action: string, rule: AuthorizationRuleView): AuthorizationPolicyView => ({
  namespace: "foo",
  name: action.toLowerCase(),
  action,
  rules: [rule],
});

function check(rule: AuthorizationRuleView, action: "ALLOW" | "DENY", o: Overrides, matches: boolean): void {
  const d = authorize([policy(action, rule)], { ...base, ...o });
  assert.equal(d.allowed, action === "ALLOW" ? matches : !matches, d.reason);
}

for (const f of FIELDS) {
  for (const [rows, matches] of [[f.matching, true], [f.notMatching, false]] as const) {
    for (const [label, o] of rows) {
      const verb = matches ? "matches" : "does not match";
      Deno.test(`${f.name} ${verb} ${label}`, () => {
        check(f.rule, "ALLOW", o, matches);
        check(f.rule, "DENY", o, matches);
        if (f.notRule) {
          check(f.notRule, "ALLOW", o, !matches);
          check(f.notRule, "DENY", o, !matches);
        }
      });
    }
  }
}

Deno.test("every condition key the schema accepts has rows of both outcomes", () => {
  for (const f of FIELDS) assert.ok(f.matching.length > 0 && f.notMatching.length > 0, f.name);
  const covered = new Set(FIELDS.flatMap((f) => (f.rule.when ?? []).map((c) => c.key.replace(/\[.*$/, ""))));
  for (const key of [...PLAIN_CONDITION_KEYS, ...BRACKETED_CONDITION_KEYS]) assert.ok(covered.has(key), key);
});

/** Bad values are refused when compiled, naming the field; none is skipped or matched. */
const BAD_VALUES: [string, AuthorizationRuleView, RegExp][] = [
  [
    "ports: a name",
    { to: [{ operation: { ports: ["http"] } }] },
    /to\[0\]\.operation\.ports: "http" is not a port/,
  ],
  [
    "ports: 65536",
    { to: [{ operation: { notPorts: ["65536"] } }] },
    /operation\.ports: "65536" is not a port/,
  ],
  [
    "destination.port: -1",
    { when: [{ key: "destination.port", values: ["-1"] }] },
    /when\[0\]: "-1" is not a port/,
  ],
  [
    "destination.port: 8000.5",
    { when: [{ key: "destination.port", notValues: ["8000.5"] }] },
    /"8000\.5" is not a port/,
  ],
  [
    "source.ip: 10.0.0.256",
    { when: [{ key: "source.ip", values: ["10.0.0.256"] }] },
    /"10\.0\.0\.256" is not an IP/,
  ],
  [
    "remote.ip: a name",
    { when: [{ key: "remote.ip", values: ["example.com"] }] },
    /"example\.com" is not an IP/,
  ],
  [
    "destination.ip: /33",
    { when: [{ key: "destination.ip", values: ["10.0.0.0/33"] }] },
    /"10\.0\.0\.0\/33"/,
  ],
  [
    "remoteIpBlocks: bad",
    { from: [{ source: { notRemoteIpBlocks: ["1.2.3"] } }] },
    /remoteIpBlocks: "1\.2\.3"/,
  ],
  [
    "an Envoy filter attribute",
    { when: [{ key: "experimental.envoy.filters.network.mysql_proxy[db.table]", values: ["x"] }] },
    /condition key "experimental\.envoy\.filters\.network\.mysql_proxy\[db\.table\]" is not supported/,
  ],
  [
    "request.headers without a name",
    { when: [{ key: "request.headers", values: ["x"] }] },
    /is not supported/,
  ],
  [
    "request.auth.claims[] empty",
    { when: [{ key: "request.auth.claims[]", values: ["x"] }] },
    /expected \[name\]/,
  ],
];

for (const [name, rule, message] of BAD_VALUES) {
  Deno.test(`compileAuthorization refuses ${name}`, () => {
    for (const action of ["ALLOW", "DENY"]) {
      assert.throws(
        () => compileAuthorization([policy(action, rule)]),
        (e: unknown) => e instanceof RangeError && message.test(e.message),
      );
    }
  });
}
