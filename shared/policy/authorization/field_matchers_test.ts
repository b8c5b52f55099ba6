/**
 * Every source field and operation field against requests it must match and requests it must not
 * match (the way ztunnel's `rbac_test!` checks each field with both outcomes), in its plain and its
 * `not` form, under ALLOW and DENY. The non-matching requests carry the value in a neighbouring
 * attribute (the remote IP for `ipBlocks`, `azp` for ..., the host for paths), so a matcher that
 * reads the wrong attribute fails. tests/mutation/run.ts plants such bugs and checks that these
 * rows catch them.
 */
import assert from "node:assert/strict";
import {
  type BadValue,
  type FieldCase,
  ISS,
  NAMESPACE_ROWS,
  noToken,
  operation,
  peer,
  plainText,
  PRINCIPAL_ROWS,
  REMOTE_IP_ROWS,
  REQUEST_PRINCIPAL_ROWS,
  SERVICE_ACCOUNT_ROWS,
  source,
  SOURCE_IP_ROWS,
  testBadValues,
  testFieldCases,
  token,
  TRUST_DOMAIN_ROWS,
} from "./_test_support.ts";

/** Source and operation fields, each against requests it must match and requests it must not. */
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
    name: "requestPrincipals iss/*",
    ...source("requestPrincipals", [`${ISS}/*`]),
    matching: [token("of the issuer"), token("of another subject", { sub: "someone" })],
    notMatching: [noToken, token("of another issuer", { iss: "other" })],
  },
  {
    name: "requestPrincipals */sub",
    ...source("requestPrincipals", [`*/${ISS}`]),
    matching: [token("of the issuer"), token("of another issuer", { iss: "other" })],
    notMatching: [noToken, token("of another subject", { sub: "someone" })],
  },
  {
    name: "requestPrincipals *",
    ...source("requestPrincipals", ["*"]),
    matching: [token("of the issuer"), token("of another issuer", { iss: "other" })],
    notMatching: [noToken],
  },
  {
    name: "principals prefix*",
    ...source("principals", ["cluster.local/ns/foo/*"]),
    matching: [["base", {}], peer("spiffe://cluster.local/ns/foo/sa/other")],
    notMatching: [
      peer("spiffe://cluster.local/ns/foobar/sa/sleep"),
      peer("spiffe://other.td/ns/foo/sa/sleep"),
      peer("cluster.local/ns/foo/sa/sleep"),
      plainText,
    ],
  },
  {
    name: "principals *suffix",
    ...source("principals", ["*/sa/sleep"]),
    matching: [["base", {}], peer("spiffe://other.td/ns/bar/sa/sleep")],
    notMatching: [peer("spiffe://cluster.local/ns/foo/sa/sleepy"), peer("spiffe:///sa/sleepy"), plainText],
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
    name: "trustDomains prefix*",
    ...source("trustDomains", ["cluster.*"]),
    matching: [["base", {}], peer("spiffe://cluster.other/ns/x/sa/y")],
    notMatching: [
      peer("spiffe://clusterx/ns/foo/sa/sleep"),
      peer("spiffe://other.td/ns/cluster.local/sa/sleep"),
      peer("cluster.local/ns/foo/sa/sleep"),
      plainText,
    ],
  },
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
  // Values and notValues together: the field must match a value and no notValue.
  {
    name: "principals * and notPrincipals sleep",
    rule: { from: [{ source: { principals: ["*"], notPrincipals: ["cluster.local/ns/foo/sa/sleep"] } }] },
    matching: [peer("spiffe://cluster.local/ns/foo/sa/other")],
    notMatching: [["base", {}], plainText],
  },
];

testFieldCases(FIELDS);

Deno.test("every field of this file has rows of both outcomes", () => {
  for (const f of FIELDS) assert.ok(f.matching.length > 0 && f.notMatching.length > 0, f.name);
});

/** Bad values are refused when compiled, naming the field; none is skipped or matched. */
const BAD_VALUES: BadValue[] = [
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
    "remoteIpBlocks: bad",
    { from: [{ source: { notRemoteIpBlocks: ["1.2.3"] } }] },
    /remoteIpBlocks: "1\.2\.3"/,
  ],
];

testBadValues(BAD_VALUES);
