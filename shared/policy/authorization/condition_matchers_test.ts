/**
 * Every condition key against requests it must match and requests it must not match (the way
 * ztunnel's `rbac_test!` checks each field with both outcomes), in its plain and its `notValues`
 * form, under ALLOW and DENY. The non-matching requests carry the value in a neighbouring attribute
 * (the destination IP for `source.ip`, `azp` for `audiences`, ...), so a matcher that reads the
 * wrong attribute fails. tests/mutation/run.ts plants such bugs and checks that these rows catch
 * them.
 */
import assert from "node:assert/strict";
import {
  BRACKETED_CONDITION_KEYS,
  PLAIN_CONDITION_KEYS,
} from "../../api/schemas/authorization_conditions.ts";
import {
  type BadValue,
  condition,
  type FieldCase,
  ISS,
  NAMESPACE_ROWS,
  noToken,
  peer,
  PRINCIPAL_ROWS,
  REMOTE_IP_ROWS,
  REQUEST_PRINCIPAL_ROWS,
  SERVICE_ACCOUNT_ROWS,
  SOURCE_IP_ROWS,
  testBadValues,
  testFieldCases,
  token,
  TRUST_DOMAIN_ROWS,
} from "./_test_support.ts";

/** Condition keys, each against requests it must match and requests it must not. */
const FIELDS: FieldCase[] = [
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
  {
    name: "source.namespace values and notValues",
    rule: { when: [{ key: "source.namespace", values: ["f*"], notValues: ["foo"] }] },
    matching: [peer("spiffe://cluster.local/ns/fox/sa/sleep")],
    notMatching: [["base", {}], peer("spiffe://cluster.local/ns/bar/sa/sleep")],
  },
];

testFieldCases(FIELDS);

Deno.test("every condition key the schema accepts has rows of both outcomes", () => {
  for (const f of FIELDS) assert.ok(f.matching.length > 0 && f.notMatching.length > 0, f.name);
  const covered = new Set(FIELDS.flatMap((f) => (f.rule.when ?? []).map((c) => c.key.replace(/\[.*$/, ""))));
  for (const key of [...PLAIN_CONDITION_KEYS, ...BRACKETED_CONDITION_KEYS]) assert.ok(covered.has(key), key);
});

/** Bad values are refused when compiled, naming the key; none is skipped or matched. */
const BAD_VALUES: BadValue[] = [
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

testBadValues(BAD_VALUES);
