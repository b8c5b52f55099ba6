import assert from "node:assert/strict";
import { assertFindings, type ExpectedFinding as Expected } from "./_test_support.ts";
import { parse } from "yaml";
import { validateResource } from "../validate_resource.ts";
import { AUTHORIZATION_ACTIONS, authorizationPolicy } from "./authorization_policy.ts";

interface Case {
  name: string;
  spec: unknown;
  /** Every finding, exactly; [] means the resource is clean. */
  want: Expected[];
}

type Path = (string | number)[];

const err = (path: Path, message: string): Expected => ({ severity: "error", path, message });
const warn = (path: Path, message: string): Expected => ({ severity: "warning", path, message });

function resource(spec: unknown): unknown {
  return {
    apiVersion: "security.mesh.io/v1",
    kind: "AuthorizationPolicy",
    metadata: { name: "ap", namespace: "foo" },
    spec,
  };
}

const SELECTOR = { matchLabels: { app: "httpbin" } };
const R0: Path = ["spec", "rules", 0];
const SRC: Path = [...R0, "from", 0, "source"];
const OP: Path = [...R0, "to", 0, "operation"];
const W0: Path = [...R0, "when", 0];

/** An ALLOW policy with one rule. */
const allow = (rule: unknown): unknown => ({ selector: SELECTOR, rules: [rule] });
/** A DENY policy with one rule. */
const deny = (rule: unknown): unknown => ({ selector: SELECTOR, action: "DENY", rules: [rule] });
/** An ALLOW policy whose one rule has one source. */
const fromSource = (source: unknown): unknown => allow({ from: [{ source }] });
/** An ALLOW policy whose one rule has one operation. */
const toOperation = (operation: unknown): unknown => allow({ to: [{ operation }] });
/** An ALLOW policy whose one rule has one condition. */
const when = (condition: unknown): unknown => allow({ when: [condition] });

// ---------------------------------------------------------------------------------------------
// action, provider, rules
// ---------------------------------------------------------------------------------------------

const actionCases: Case[] = [
  { name: "spec {} is valid (ALLOW nothing)", spec: {}, want: [] },
  { name: "rules [{}] is valid (ALLOW everything)", spec: { rules: [{}] }, want: [] },
  ...AUTHORIZATION_ACTIONS.filter((a) => a !== "CUSTOM").map((action): Case => ({
    name: `action enum: ${action} passes`,
    spec: {
      selector: SELECTOR,
      action,
      rules: [{ to: [{ operation: { ports: ["8080"], methods: ["GET"] } }] }],
    },
    want: [],
  })),
  {
    name: "action enum: ALOW fails",
    spec: { action: "ALOW" },
    want: [err(["spec", "action"], 'must be one of ALLOW, DENY, AUDIT, CUSTOM; got the string "ALOW"')],
  },
  {
    name: "action enum: lower-case deny fails",
    spec: { action: "deny", rules: [{}] },
    want: [err(["spec", "action"], "must be one of ALLOW, DENY, AUDIT, CUSTOM")],
  },
  {
    name: "action CUSTOM is rejected as not supported yet (with provider and rules)",
    spec: { action: "CUSTOM", provider: { name: "ext-authz" }, rules: [{}] },
    want: [err(["spec", "action"], "action CUSTOM (external authorization) is not supported yet")],
  },
  {
    name: "action CUSTOM without provider also needs provider.name",
    spec: { action: "CUSTOM", rules: [{}] },
    want: [
      err(["spec", "action"], "not supported yet"),
      err(["spec", "provider", "name"], "CUSTOM needs provider.name"),
    ],
  },
  {
    name: "action CUSTOM with an empty provider.name needs provider.name",
    spec: { action: "CUSTOM", provider: { name: "" }, rules: [{}] },
    want: [
      err(["spec", "action"], "not supported yet"),
      err(["spec", "provider", "name"], "CUSTOM needs provider.name"),
    ],
  },
  {
    name: "action CUSTOM without rules never matches",
    spec: { action: "CUSTOM", provider: { name: "ext-authz" } },
    want: [
      err(["spec", "action"], "not supported yet"),
      err(["spec", "rules"], "CUSTOM without rules never matches"),
    ],
  },
  {
    name: "provider only with CUSTOM: provider with default action (ALLOW) fails",
    spec: { provider: { name: "ext-authz" }, rules: [{}] },
    want: [err(["spec", "provider"], "provider is only allowed with action CUSTOM, not ALLOW")],
  },
  {
    name: "provider only with CUSTOM: provider with DENY fails",
    spec: { action: "DENY", provider: { name: "ext-authz" }, rules: [{}] },
    want: [err(["spec", "provider"], "provider is only allowed with action CUSTOM, not DENY")],
  },
  {
    name: "provider only with CUSTOM: provider with AUDIT fails",
    spec: { action: "AUDIT", provider: { name: "ext-authz" }, rules: [{}] },
    want: [err(["spec", "provider"], "not AUDIT")],
  },
  {
    name: "DENY without rules fails",
    spec: { selector: SELECTOR, action: "DENY" },
    want: [
      err(["spec", "rules"], "DENY without rules never matches; add an empty rule {} to match every request"),
    ],
  },
  {
    // `rules: []` has no rule either, so the policy never matches (Istio reads an empty list as unset).
    name: "DENY without rules: rules [] fails too",
    spec: { selector: SELECTOR, action: "DENY", rules: [] },
    want: [err(["spec", "rules"], "DENY without rules never matches")],
  },
  { name: "DENY with rules [{}] (deny everything) passes", spec: { action: "DENY", rules: [{}] }, want: [] },
  { name: "AUDIT without rules passes", spec: { action: "AUDIT" }, want: [] },
];

// ---------------------------------------------------------------------------------------------
// conditions (when)
// ---------------------------------------------------------------------------------------------

const documentedKeys: [string, string[]][] = [
  ["source.ip", ["10.0.0.1", "10.0.0.0/8"]],
  ["remote.ip", ["203.0.113.7", "2001:db8::/32"]],
  ["source.namespace", ["foo"]],
  ["source.principal", ["cluster.local/ns/foo/sa/sleep"]],
  ["source.serviceAccount", ["foo/sleep", "sleep"]],
  ["source.trustDomain", ["cluster.local", "*.example.com"]],
  ["request.auth.principal", ["https://issuer.example.com/alice"]],
  ["request.auth.audiences", ["api.example.com"]],
  ["request.auth.presenter", ["client-app"]],
  ["request.auth.claims[groups]", ["group1"]],
  ["request.auth.claims[a][b]", ["nested"]],
  ["request.headers[x-token]", ["admin"]],
  ["destination.ip", ["10.0.0.2", "::1"]],
  ["destination.port", ["8080", "0", "65535"]],
  ["connection.sni", ["www.example.com"]],
];

const conditionCases: Case[] = [
  ...documentedKeys.map(([key, values]): Case => ({
    name: `condition key ${key} passes`,
    spec: when({ key, values }),
    want: [],
  })),
  {
    name: "condition with only notValues passes",
    spec: when({ key: "source.namespace", notValues: ["bar"] }),
    want: [],
  },
  {
    name: "condition needs values or notValues: neither set fails",
    spec: when({ key: "source.namespace" }),
    want: [err(W0, "a condition needs values or notValues (key source.namespace)")],
  },
  {
    name: "condition needs values or notValues: both empty lists fail",
    spec: when({ key: "request.headers[x-token]", values: [], notValues: [] }),
    want: [err(W0, "a condition needs values or notValues")],
  },
  {
    name: "condition key must not be empty",
    spec: when({ key: "", values: ["x"] }),
    want: [err([...W0, "key"], "key must not be empty")],
  },
  {
    name: "condition value must not be empty",
    spec: when({ key: "source.namespace", values: ["foo", ""] }),
    want: [err([...W0, "key"], "empty value not allowed (value 1)")],
  },
  ...["request.header[x]", "source.foo", "request.method", "destination.service", "source.ip[0]"].map(
    (key): Case => ({
      name: `unknown condition key ${key} fails`,
      spec: when({ key, values: ["x"] }),
      want: [err([...W0, "key"], `unknown condition key "${key}"; known keys: source.ip`)],
    }),
  ),
  {
    name: "unknown condition key: request.headers without a name fails",
    spec: when({ key: "request.headers", values: ["x"] }),
    want: [err([...W0, "key"], 'bad key "request.headers": expected request.headers[name]')],
  },
  {
    name: "unknown condition key: request.headers[] (empty name) fails",
    spec: when({ key: "request.headers[]", values: ["x"] }),
    want: [err([...W0, "key"], 'bad key "request.headers[]": expected request.headers[name]')],
  },
  {
    name: "unknown condition key: request.headers[a][b] (two names) fails",
    spec: when({ key: "request.headers[a][b]", values: ["x"] }),
    want: [err([...W0, "key"], "request.headers takes one name")],
  },
  {
    name: "unknown condition key: request.auth.claims[a]b fails",
    spec: when({ key: "request.auth.claims[a]b", values: ["x"] }),
    want: [err([...W0, "key"], "expected request.auth.claims[name]")],
  },
  {
    name: "unknown condition key: request.auth.claims without a name fails",
    spec: when({ key: "request.auth.claims", values: ["x"] }),
    want: [err([...W0, "key"], "expected request.auth.claims[name]")],
  },
  {
    name: "unsupported condition key: experimental.envoy.filters.* fails",
    spec: when({ key: "experimental.envoy.filters.network.mysql_proxy[db.table]", values: ["[update]"] }),
    want: [err([...W0, "key"], "this mesh's proxy is not Envoy")],
  },
  {
    name: "replaced condition key: destination.labels[x] fails",
    spec: when({ key: "destination.labels[x]", values: ["y"] }),
    want: [
      err(
        [...W0, "key"],
        'condition key "destination.labels[x]" is not supported: it is replaced by the workload selector',
      ),
    ],
  },
  {
    name: "replaced condition key: destination.namespace fails",
    spec: when({ key: "destination.namespace", values: ["foo"] }),
    want: [err([...W0, "key"], "it is replaced by the policy's metadata.namespace")],
  },
  {
    name: "replaced condition key: destination.name (v1alpha1) fails",
    spec: when({ key: "destination.name", values: ["foo"] }),
    want: [err([...W0, "key"], "only supported in Istio's v1alpha1 RBAC")],
  },
  {
    name: "replaced condition key: destination.user (v1alpha1) fails",
    spec: when({ key: "destination.user", values: ["foo"] }),
    want: [err([...W0, "key"], "only supported in Istio's v1alpha1 RBAC")],
  },
  ...[
    ["source.ip", "not-an-ip"],
    ["source.ip", "10.0.0.0/33"],
    ["remote.ip", "256.1.1.1"],
    ["destination.ip", "2001:db8::/129"],
    ["destination.ip", "10.0.0"],
  ].map(([key, value]): Case => ({
    name: `bad ip value for ${key}: "${value}" fails`,
    spec: when({ key, values: [value] }),
    want: [err([...W0, "key"], `"${value}" is not an IP address or CIDR range`)],
  })),
  ...["http", "65536", "-1", "80-90"].map((value): Case => ({
    name: `bad port value for destination.port: "${value}" fails`,
    spec: when({ key: "destination.port", values: [value] }),
    want: [err([...W0, "key"], `"${value}" is not a port in 0..65535`)],
  })),
  {
    name: "bad port value in notValues for destination.port fails",
    spec: when({ key: "destination.port", notValues: ["8080", "x"] }),
    want: [err([...W0, "key"], '"x" is not a port in 0..65535')],
  },
  {
    name: "bad value for source.serviceAccount: a/b/c fails",
    spec: when({ key: "source.serviceAccount", values: ["a/b/c"] }),
    want: [err([...W0, "key"], 'expected "serviceAccount" or "namespace/serviceAccount", got "a/b/c"')],
  },
  {
    name: "bad value for source.serviceAccount: * fails",
    spec: when({ key: "source.serviceAccount", values: ["*"] }),
    want: [err([...W0, "key"], "wildcards are not allowed in service accounts")],
  },
  {
    name: "bad value for source.trustDomain: wildcard in the middle fails",
    spec: when({ key: "source.trustDomain", values: ["a*b.local"] }),
    want: [err([...W0, "key"], "a wildcard is allowed only at the start or the end")],
  },
  {
    name: "a condition that is unknown and has no values reports both",
    spec: when({ key: "source.foo" }),
    want: [err(W0, "needs values or notValues"), err([...W0, "key"], 'unknown condition key "source.foo"')],
  },
];

// ---------------------------------------------------------------------------------------------
// path templates
// ---------------------------------------------------------------------------------------------

const pathCases: Case[] = [
  ...["/foo/{*}/bar", "/foo/{**}", "/{*}/x/{**}", "/{*}", "/foo/{*}/", "/foo/{**}/bar.css", "/a/{*}/b@c:d=e"]
    .map(
      (path): Case => ({
        name: `path template "${path}" passes`,
        spec: toOperation({ paths: [path] }),
        want: [],
      }),
    ),
  ...["/plain path/with spaces?and=query&x=<y>#frag", "/api/*", "*.css", "/ünïcödé/"].map((path): Case => ({
    name: `plain path with odd characters and no template "${path}" passes`,
    spec: toOperation({ paths: [path] }),
    want: [],
  })),
  ...["/foo/{**}/{*}", "/foo/{**}/bar/{**}"].map((path): Case => ({
    name: `path template "${path}" fails ({**} not last)`,
    spec: toOperation({ paths: [path] }),
    want: [err([...OP, "paths", 0], `invalid path "${path}": {**} must be the last template`)],
  })),
  ...["/foo/{x}", "/foo{*}", "/a/{*}b", "/a/{***}", "/a/{*", "/a/}"].map((path): Case => ({
    name: `path template "${path}" fails (brace outside a whole-segment template)`,
    spec: toOperation({ paths: [path] }),
    want: [err([...OP, "paths", 0], `invalid path "${path}": "{" or "}" outside a whole-segment`)],
  })),
  {
    name: 'path template with a bad literal beside it fails: "/a b/{*}"',
    spec: toOperation({ paths: ["/a b/{*}"] }),
    want: [err([...OP, "paths", 0], 'segment "a b" has characters not allowed beside a template')],
  },
  {
    name: 'path template beside an empty segment fails, as Istio: "/a//{*}"',
    spec: toOperation({ paths: ["/a//{*}"] }),
    want: [err([...OP, "paths", 0], 'segment "" has characters not allowed beside a template')],
  },
  {
    name: "path template in notPaths is checked too",
    spec: toOperation({ notPaths: ["/ok", "/foo/{x}"] }),
    want: [err([...OP, "notPaths", 1], "outside a whole-segment")],
  },
];

// ---------------------------------------------------------------------------------------------
// source (from)
// ---------------------------------------------------------------------------------------------

const seventeen = Array.from({ length: 17 }, (_, i) => `ns/sa${i}`);

const sourceCases: Case[] = [
  {
    name: "source with every non-conflicting field passes",
    spec: fromSource({
      principals: ["cluster.local/ns/foo/sa/sleep"],
      notPrincipals: ["cluster.local/ns/foo/sa/evil"],
      requestPrincipals: ["*"],
      notRequestPrincipals: ["https://bad/*"],
      namespaces: ["foo"],
      notNamespaces: ["bar"],
      ipBlocks: ["10.0.0.0/8"],
      notIpBlocks: ["10.1.0.0/16"],
      remoteIpBlocks: ["203.0.113.0/24"],
      notRemoteIpBlocks: ["203.0.113.7"],
      trustDomains: ["cluster.local"],
      notTrustDomains: ["*.evil.example"],
    }),
    want: [],
  },
  ...[["principals", "cluster.local/ns/foo/sa/x"], ["namespaces", "foo"], ["notPrincipals", "x"], [
    "notNamespaces",
    "bar",
  ]].map(([field, value]): Case => ({
    name: `serviceAccounts cannot be combined with ${field}`,
    spec: fromSource({ serviceAccounts: ["foo/sleep"], [field]: [value] }),
    want: [err(SRC, "serviceAccounts cannot be combined with principals or namespaces")],
  })),
  {
    name: "serviceAccounts cannot be combined: notServiceAccounts with namespaces fails",
    spec: fromSource({ notServiceAccounts: ["foo/sleep"], namespaces: ["foo"] }),
    want: [err(SRC, "serviceAccounts cannot be combined with principals or namespaces")],
  },
  {
    name: "serviceAccounts combine with ipBlocks and requestPrincipals",
    spec: fromSource({ serviceAccounts: ["foo/sleep"], ipBlocks: ["10.0.0.0/8"], requestPrincipals: ["*"] }),
    want: [],
  },
  {
    name: 'serviceAccounts format: "ns/sa" and "sa" pass',
    spec: fromSource({ serviceAccounts: ["ns/sa", "sa"], notServiceAccounts: ["ns/other"] }),
    want: [],
  },
  ...["a/b/c", "/sa", "ns/"].map((sa): Case => ({
    name: `serviceAccounts format: "${sa}" fails`,
    spec: fromSource({ serviceAccounts: ["ok", sa] }),
    want: [
      err(
        [...SRC, "serviceAccounts", 1],
        `expected "serviceAccount" or "namespace/serviceAccount", got "${sa}"`,
      ),
    ],
  })),
  ...["*", "ns/*", "sa-*"].map((sa): Case => ({
    name: `serviceAccounts format: "${sa}" fails (wildcard)`,
    spec: fromSource({ serviceAccounts: [sa] }),
    want: [err([...SRC, "serviceAccounts", 0], `wildcards are not allowed in service accounts: "${sa}"`)],
  })),
  {
    name: "serviceAccounts format: longer than 320 characters fails",
    spec: fromSource({ serviceAccounts: ["ns/" + "a".repeat(320)] }),
    want: [err([...SRC, "serviceAccounts", 0], "is longer than 320 characters")],
  },
  {
    name: "serviceAccounts format: notServiceAccounts is checked too",
    spec: fromSource({ notServiceAccounts: ["a/b/c"] }),
    want: [err([...SRC, "notServiceAccounts", 0], "namespace/serviceAccount")],
  },
  {
    name: "serviceAccounts: 16 pass",
    spec: fromSource({ serviceAccounts: seventeen.slice(0, 16) }),
    want: [],
  },
  {
    name: "serviceAccounts: more than 16 fail",
    spec: fromSource({ serviceAccounts: seventeen }),
    want: [err([...SRC, "serviceAccounts"], "at most 16 service accounts are allowed")],
  },
  {
    name: "serviceAccounts: more than 16 notServiceAccounts fail",
    spec: fromSource({ notServiceAccounts: seventeen }),
    want: [err([...SRC, "notServiceAccounts"], "at most 16 service accounts are allowed")],
  },
  ...["10.0.0.0/8", "1.2.3.4", "0.0.0.0/0", "2001:db8::/32", "::1", "::ffff:10.0.0.1", "10.0.0.1/32"].map(
    (ip): Case => ({ name: `ipBlocks CIDR: "${ip}" passes`, spec: fromSource({ ipBlocks: [ip] }), want: [] }),
  ),
  ...[
    "10.0.0.0/33",
    "256.0.0.1",
    "10.0.0",
    "01.2.3.4",
    "1.2.3.4/",
    "1.2.3.4/-1",
    "2001:db8::/129",
    "abc",
    "fe80::1%eth0",
  ]
    .map((ip): Case => ({
      name: `ipBlocks CIDR: "${ip}" fails`,
      spec: fromSource({ ipBlocks: [ip] }),
      want: [err([...SRC, "ipBlocks", 0], `"${ip}" is not an IP address or CIDR range`)],
    })),
  ...["::1]:80#", "::1]?x"].map((ip): Case => ({
    // The IPv6 check parses `http://[${text}]/`; text that closes the bracket itself must not pass.
    name: `ipBlocks CIDR: "${ip}" (bracket injection) fails`,
    spec: fromSource({ ipBlocks: [ip] }),
    want: [err([...SRC, "ipBlocks", 0], "is not an IP address or CIDR range")],
  })),
  ...(["notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks"] as const).map((field): Case => ({
    name: `ipBlocks CIDR: ${field} is checked too`,
    spec: fromSource({ [field]: ["10.0.0.0/8", "10.0.0.0/99"] }),
    want: [err([...SRC, field, 1], '"10.0.0.0/99" is not an IP address or CIDR range')],
  })),
  ...["cluster.local", "*.example.com", "example.*", "*"].map((td): Case => ({
    name: `trustDomains: "${td}" passes`,
    spec: fromSource({ trustDomains: [td] }),
    want: [],
  })),
  {
    name: 'trustDomains "/": a slash fails',
    spec: fromSource({ trustDomains: ["cluster.local/ns/foo"] }),
    want: [err([...SRC, "trustDomains", 0], 'a trust domain must not contain "/": "cluster.local/ns/foo"')],
  },
  {
    name: "trustDomains wildcard: in the middle fails",
    spec: fromSource({ trustDomains: ["a*b.local"] }),
    want: [
      err([...SRC, "trustDomains", 0], 'a wildcard is allowed only at the start or the end: "a*b.local"'),
    ],
  },
  {
    name: "trustDomains wildcard: two wildcards fail",
    spec: fromSource({ trustDomains: ["*.local*"] }),
    want: [err([...SRC, "trustDomains", 0], 'at most one wildcard is allowed: "*.local*"')],
  },
  {
    name: "trustDomains wildcard: notTrustDomains is checked too",
    spec: fromSource({ notTrustDomains: ["x/y"] }),
    want: [err([...SRC, "notTrustDomains", 0], 'must not contain "/"')],
  },
  ...(["principals", "requestPrincipals", "namespaces", "notNamespaces", "trustDomains", "ipBlocks"] as const)
    .map(
      (field): Case => ({
        name: `empty value in source ${field} fails`,
        spec: fromSource({ [field]: [""] }),
        want: [err([...SRC, field, 0], "empty value not allowed")],
      }),
    ),
  {
    name: "empty source {} fails",
    spec: fromSource({}),
    want: [err(SRC, "source must set at least one field")],
  },
  {
    name: "empty source: only empty lists fails",
    spec: fromSource({ principals: [], namespaces: [] }),
    want: [err(SRC, "source must set at least one field")],
  },
  {
    name: "empty from list fails",
    spec: allow({ from: [] }),
    want: [err([...R0, "from"], "from must not be empty")],
  },
  {
    name: "second source of the second rule is reported at its own path",
    spec: {
      rules: [{}, { from: [{ source: { namespaces: ["foo"] } }, { source: { ipBlocks: ["x"] } }] }],
    },
    want: [err(["spec", "rules", 1, "from", 1, "source", "ipBlocks", 0], '"x" is not an IP address')],
  },
];

// ---------------------------------------------------------------------------------------------
// operation (to)
// ---------------------------------------------------------------------------------------------

const operationCases: Case[] = [
  {
    name: "operation with every field passes",
    spec: toOperation({
      hosts: ["example.com"],
      notHosts: ["evil.example.com"],
      ports: ["8080"],
      notPorts: ["9090"],
      methods: ["GET"],
      notMethods: ["DELETE"],
      paths: ["/api/*"],
      notPaths: ["/api/admin"],
    }),
    want: [],
  },
  {
    name: "empty operation {} fails",
    spec: toOperation({}),
    want: [err(OP, "operation must set at least one field")],
  },
  {
    name: "empty operation: only empty lists fails",
    spec: toOperation({ methods: [], paths: [] }),
    want: [err(OP, "operation must set at least one field")],
  },
  {
    name: "empty to list fails",
    spec: allow({ to: [] }),
    want: [err([...R0, "to"], "to must not be empty")],
  },
  ...["0", "80", "65535"].map((port): Case => ({
    name: `ports in operation: "${port}" passes`,
    spec: toOperation({ ports: [port] }),
    want: [],
  })),
  ...["http", "65536", "-1", "8080-8090", "80 "].map((port): Case => ({
    name: `ports in operation: "${port}" fails`,
    spec: toOperation({ ports: [port] }),
    want: [err([...OP, "ports", 0], `"${port}" is not a port in 0..65535`)],
  })),
  {
    name: "ports in operation: notPorts is checked too",
    spec: toOperation({ notPorts: ["80", "99999"] }),
    want: [err([...OP, "notPorts", 1], '"99999" is not a port in 0..65535')],
  },
  ...(["hosts", "methods", "paths", "ports"] as const).map((field): Case => ({
    name: `empty value in operation ${field} fails`,
    spec: toOperation({ [field]: [""] }),
    want: [err([...OP, field, 0], "empty value not allowed")],
  })),
];

// ---------------------------------------------------------------------------------------------
// DENY with only HTTP attributes
// ---------------------------------------------------------------------------------------------

const DENY_HTTP_ONLY = "this DENY rule uses only HTTP attributes, so it denies all traffic to TCP ports";

const denyCases: Case[] = [
  {
    name: "DENY-only-HTTP-attributes warning: to.operation methods only",
    spec: deny({ to: [{ operation: { methods: ["GET"] } }] }),
    want: [warn(R0, DENY_HTTP_ONLY)],
  },
  {
    name: "DENY-only-HTTP-attributes warning: from.source requestPrincipals only",
    spec: deny({ from: [{ source: { requestPrincipals: ["*"] } }] }),
    want: [warn(R0, DENY_HTTP_ONLY)],
  },
  {
    name: "DENY-only-HTTP-attributes warning: notRequestPrincipals and paths",
    spec: deny({
      from: [{ source: { notRequestPrincipals: ["*"] } }],
      to: [{ operation: { paths: ["/admin"] } }],
    }),
    want: [warn(R0, DENY_HTTP_ONLY)],
  },
  {
    name: "DENY-only-HTTP-attributes warning: one to entry without ports is enough",
    spec: deny({ to: [{ operation: { ports: ["8080"] } }, { operation: { hosts: ["a.example.com"] } }] }),
    want: [warn(R0, DENY_HTTP_ONLY)],
  },
  {
    name: "DENY-only-HTTP-attributes warning: reported for the second rule at its path",
    spec: {
      action: "DENY",
      rules: [{ to: [{ operation: { ports: ["8080"] } }] }, { to: [{ operation: { methods: ["POST"] } }] }],
    },
    want: [warn(["spec", "rules", 1], DENY_HTTP_ONLY)],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent when ports are named",
    spec: deny({ to: [{ operation: { methods: ["GET"], ports: ["8080"] } }] }),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent when notPorts are named",
    spec: deny({ to: [{ operation: { methods: ["GET"], notPorts: ["9090"] } }] }),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent: requestPrincipals with ports named",
    spec: deny({
      from: [{ source: { requestPrincipals: ["*"] } }],
      to: [{ operation: { ports: ["8080"] } }],
    }),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent: source with a TCP attribute (ipBlocks)",
    spec: deny({ from: [{ source: { requestPrincipals: ["*"], ipBlocks: ["10.0.0.0/8"] } }] }),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent: DENY rules [{}]",
    spec: deny({}),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent for ALLOW",
    spec: allow({ to: [{ operation: { methods: ["GET"] } }] }),
    want: [],
  },
  {
    name: "DENY-only-HTTP-attributes warning absent for AUDIT",
    spec: { action: "AUDIT", rules: [{ to: [{ operation: { methods: ["GET"] } }] }] },
    want: [],
  },
];

// ---------------------------------------------------------------------------------------------
// targetRef, selector, schema
// ---------------------------------------------------------------------------------------------

const otherCases: Case[] = [
  {
    name: "targetRef rejected",
    spec: { targetRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }, rules: [{}] },
    want: [err(["spec", "targetRef"], "targetRef is not supported: this mesh has no Kubernetes Gateway API")],
  },
  {
    name: "targetRefs rejected",
    spec: { targetRefs: [{ kind: "Service", name: "httpbin" }], rules: [{}] },
    want: [err(["spec", "targetRefs"], "targetRefs is not supported")],
  },
  {
    name: "workload selector empty-key fails",
    spec: { selector: { matchLabels: { "": "httpbin" } } },
    want: [err(["spec", "selector", "matchLabels", ""], "empty label key is not allowed")],
  },
  {
    name: "workload selector wildcard (key) fails",
    spec: { selector: { matchLabels: { "app.kubernetes.io/*": "x" } } },
    want: [
      err(
        ["spec", "selector", "matchLabels", "app.kubernetes.io/*"],
        "wildcards are not supported in selectors",
      ),
    ],
  },
  {
    name: "workload selector wildcard (value) fails",
    spec: { selector: { matchLabels: { app: "http*" } } },
    want: [
      err(
        ["spec", "selector", "matchLabels", "app"],
        'wildcards are not supported in selectors: "app=http*"',
      ),
    ],
  },
  {
    name: "workload selector no-labels warning",
    spec: { selector: {}, rules: [{}] },
    want: [
      warn(["spec", "selector"], "workload selector has no labels, so it selects every workload in scope"),
    ],
  },
  {
    name: "schema unknown field: spec.rule fails",
    spec: { rule: [{}] },
    want: [err(["spec", "rule"], 'unknown field "rule"')],
  },
  {
    name: "schema wrong type: rules as a string fails",
    spec: { rules: "all" },
    want: [err(["spec", "rules"], 'expected a list, got the string "all"')],
  },
  {
    name: "schema wrong type: provider as a string fails (and provider without CUSTOM)",
    spec: { provider: "ext-authz", rules: [{}] },
    want: [
      err(["spec", "provider"], 'expected a map, got the string "ext-authz"'),
      err(["spec", "provider"], "provider is only allowed with action CUSTOM"),
    ],
  },
  {
    name: "schema unknown field: from[0].source.principal fails",
    spec: fromSource({ principal: ["x"] }),
    want: [
      err([...SRC, "principal"], 'unknown field "principal"'),
      err(SRC, "source must set at least one field"),
    ],
  },
  {
    name: "schema required field: from[0] without source fails",
    spec: allow({ from: [{}] }),
    want: [err([...R0, "from", 0, "source"], "required field is missing")],
  },
  {
    name: "schema wrong type: a port as a number fails",
    spec: toOperation({ ports: [8080] }),
    want: [err([...OP, "ports", 0], "expected a string, got number 8080")],
  },
];

const allCases = [
  ...actionCases,
  ...conditionCases,
  ...pathCases,
  ...sourceCases,
  ...operationCases,
  ...denyCases,
  ...otherCases,
];

for (const c of allCases) {
  Deno.test(`AuthorizationPolicy: ${c.name}`, () => {
    assertFindings(validateResource(authorizationPolicy, resource(c.spec)), c.want);
  });
}

// ---------------------------------------------------------------------------------------------
// Istio fixtures
// ---------------------------------------------------------------------------------------------

interface FixtureCase {
  file: string;
  /** Warnings expected; a fixture never has errors. */
  warnings: Expected[];
}

const FIXTURES = new URL("../../../tests/fixtures/istio/", import.meta.url);

const fixtures: FixtureCase[] = [
  { file: "authz-deny/01_authorization_policy_deny_method_get.yaml", warnings: [warn(R0, DENY_HTTP_ONLY)] },
  {
    file: "authz-deny/02_authorization_policy_deny_method_get_unless_x_token_admin.yaml",
    warnings: [warn(R0, DENY_HTTP_ONLY)],
  },
  { file: "authz-deny/03_authorization_policy_allow_path_ip.yaml", warnings: [] },
  { file: "authz-jwt/02_authorization_policy_require_jwt.yaml", warnings: [] },
  { file: "authz-jwt/03_authorization_policy_require_jwt_groups_claim.yaml", warnings: [] },
  {
    file: "authn-policy/08_authorization_policy_frontend_ingress_require_token.yaml",
    warnings: [warn(R0, DENY_HTTP_ONLY)],
  },
  {
    file: "authn-policy/09_authorization_policy_frontend_ingress_require_token_per_path.yaml",
    warnings: [warn(R0, DENY_HTTP_ONLY)],
  },
];

for (const c of fixtures) {
  const extra = c.warnings.length ? " (only the DENY-only-HTTP warning)" : "";
  Deno.test(`AuthorizationPolicy: Istio fixture ${c.file} yields no errors${extra}`, async () => {
    const doc = parse(await Deno.readTextFile(new URL(c.file, FIXTURES)));
    assert.equal(doc.kind, "AuthorizationPolicy");
    assertFindings(validateResource(authorizationPolicy, doc), c.warnings);
  });
}
