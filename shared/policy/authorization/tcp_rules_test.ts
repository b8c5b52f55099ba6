import assert from "node:assert/strict";
import { authorizeConnection, compileAuthorization } from "./evaluate.ts";
import type { AuthorizationPolicyView, AuthorizationRuleView } from "./policy_view.ts";
import type { AuthorizationConnection } from "./request.ts";
import { httpOnlyFields, tcpRuleEffect, tcpRuleWarnings, withoutHttpOnlyFields } from "./tcp_rules.ts";

const SLEEP = "spiffe://cluster.local/ns/foo/sa/sleep";
const OTHER = "spiffe://cluster.local/ns/bar/sa/client";
const conn = (port: number, extra: Partial<AuthorizationConnection> = {}): AuthorizationConnection => ({
  port,
  sourcePrincipal: SLEEP,
  sourceIp: "10.229.0.4",
  destinationIp: "10.229.0.3",
  ...extra,
});
const policy = (
  action: string,
  rules: AuthorizationRuleView[] | undefined,
  name = "tcp-policy",
): AuthorizationPolicyView => ({ namespace: "foo", name, action, rules });
const ports = (...p: string[]) => ({ to: [{ operation: { ports: p } }] });

/** [label, policies, connection, allowed, reason pattern]. */
const CASES: [string, AuthorizationPolicyView[], AuthorizationConnection, boolean, RegExp][] = [
  // Istio's authz-tcp task, tcp-echo on 9000/9001/9002.
  ["no policy: 9000 allowed", [], conn(9000), true, /no ALLOW policy applies/],
  [
    "ALLOW ports 9000/9001: 9000 allowed",
    [policy("ALLOW", [ports("9000", "9001")])],
    conn(9000),
    true,
    /ALLOW policy foo\/tcp-policy rule 0/,
  ],
  [
    "ALLOW ports 9000/9001: 9001 allowed",
    [policy("ALLOW", [ports("9000", "9001")])],
    conn(9001),
    true,
    /rule 0/,
  ],
  [
    "ALLOW ports 9000/9001: 9002 denied",
    [policy("ALLOW", [ports("9000", "9001")])],
    conn(9002),
    false,
    /no rule of ALLOW policies foo\/tcp-policy matched$/,
  ],
  [
    "ALLOW methods GET + ports 9000: rule dropped, 9000 denied",
    [policy("ALLOW", [{ to: [{ operation: { methods: ["GET"], ports: ["9000"] } }] }])],
    conn(9000),
    false,
    /dropped on TCP for HTTP-only fields: foo\/tcp-policy rule 0/,
  ],
  [
    "DENY methods GET: HTTP-only part ignored, 9000 denied",
    [policy("DENY", [{ to: [{ operation: { methods: ["GET"] } }] }])],
    conn(9000),
    false,
    /denied by DENY policy foo\/tcp-policy rule 0/,
  ],
  [
    "DENY methods GET: 9001 denied too",
    [policy("DENY", [{ to: [{ operation: { methods: ["GET"] } }] }])],
    conn(9001),
    false,
    /DENY/,
  ],
  [
    "DENY methods GET + ports 9000: 9000 denied",
    [policy("DENY", [{ to: [{ operation: { methods: ["GET"], ports: ["9000"] } }] }])],
    conn(9000),
    false,
    /DENY/,
  ],
  [
    "DENY methods GET + ports 9000: 9001 allowed",
    [policy("DENY", [{ to: [{ operation: { methods: ["GET"], ports: ["9000"] } }] }])],
    conn(9001),
    true,
    /no ALLOW policy applies/,
  ],
  // Edge cases.
  [
    "ALLOW notPorts 9002: 9000 allowed",
    [policy("ALLOW", [{ to: [{ operation: { notPorts: ["9002"] } }] }])],
    conn(9000),
    true,
    /ALLOW/,
  ],
  [
    "ALLOW notPorts 9002: 9002 denied",
    [policy("ALLOW", [{ to: [{ operation: { notPorts: ["9002"] } }] }])],
    conn(9002),
    false,
    /no rule/,
  ],
  [
    "ALLOW notMethods only: rule dropped",
    [policy("ALLOW", [{ to: [{ operation: { notMethods: ["POST"] } }] }])],
    conn(9000),
    false,
    /dropped on TCP/,
  ],
  [
    "ALLOW mixed rules: the L4 rule still allows",
    [policy("ALLOW", [{ to: [{ operation: { paths: ["/x"] } }] }, ports("9001")])],
    conn(9001),
    true,
    /ALLOW policy foo\/tcp-policy rule 1/,
  ],
  [
    "ALLOW mixed rules: 9000 denied, rule 0 dropped",
    [policy("ALLOW", [{ to: [{ operation: { paths: ["/x"] } }] }, ports("9001")])],
    conn(9000),
    false,
    /dropped on TCP for HTTP-only fields: foo\/tcp-policy rule 0\)/,
  ],
  ["ALLOW with no rules denies all", [policy("ALLOW", [])], conn(9000), false, /no rule/],
  ["ALLOW with an empty rule allows all", [policy("ALLOW", [{}])], conn(9000), true, /ALLOW/],
  ["DENY with an empty rule denies all", [policy("DENY", [{}])], conn(9000), false, /DENY/],
  ["DENY with no rules denies nothing", [policy("DENY", [])], conn(9000), true, /no ALLOW/],
  [
    "ALLOW requestPrincipals on TCP: dropped",
    [policy("ALLOW", [{ from: [{ source: { requestPrincipals: ["*"] } }] }])],
    conn(9000),
    false,
    /dropped on TCP/,
  ],
  [
    "DENY notRequestPrincipals * on TCP: ignored, denies every connection",
    [policy("DENY", [{ from: [{ source: { notRequestPrincipals: ["*"] } }] }])],
    conn(9000),
    false,
    /DENY/,
  ],
  [
    "DENY requestPrincipals + namespaces bar: the namespace part still decides (foo allowed)",
    [policy("DENY", [{ from: [{ source: { requestPrincipals: ["*"], namespaces: ["bar"] } }] }])],
    conn(9000),
    true,
    /no ALLOW/,
  ],
  [
    "DENY requestPrincipals + namespaces bar: bar denied",
    [policy("DENY", [{ from: [{ source: { requestPrincipals: ["*"], namespaces: ["bar"] } }] }])],
    conn(9000, { sourcePrincipal: OTHER }),
    false,
    /DENY/,
  ],
  [
    "DENY when request.headers only: ignored, denies all",
    [policy("DENY", [{ when: [{ key: "request.headers[x-token]", values: ["bad"] }] }])],
    conn(9000),
    false,
    /DENY/,
  ],
  [
    "ALLOW when request.auth.claims: dropped",
    [policy("ALLOW", [{ when: [{ key: "request.auth.claims[group]", values: ["admin"] }] }])],
    conn(9000),
    false,
    /dropped/,
  ],
  [
    "ALLOW when destination.port (L4): allowed",
    [policy("ALLOW", [{ when: [{ key: "destination.port", values: ["9000"] }] }])],
    conn(9000),
    true,
    /ALLOW/,
  ],
  [
    "ALLOW principals: sleep allowed",
    [policy("ALLOW", [{ from: [{ source: { principals: ["cluster.local/ns/foo/sa/sleep"] } }] }])],
    conn(9000),
    true,
    /ALLOW/,
  ],
  [
    "ALLOW principals: plain text denied",
    [policy("ALLOW", [{ from: [{ source: { principals: ["*"] } }] }])],
    conn(9000, { sourcePrincipal: undefined }),
    false,
    /no rule/,
  ],
  [
    "ALLOW namespaces foo: bar denied",
    [policy("ALLOW", [{ from: [{ source: { namespaces: ["foo"] } }] }])],
    conn(9000, { sourcePrincipal: OTHER }),
    false,
    /no rule/,
  ],
  [
    "ALLOW ipBlocks: inside allowed",
    [policy("ALLOW", [{ from: [{ source: { ipBlocks: ["10.229.0.0/24"] } }] }])],
    conn(9000),
    true,
    /ALLOW/,
  ],
  [
    "ALLOW ipBlocks: outside denied",
    [policy("ALLOW", [{ from: [{ source: { ipBlocks: ["10.1.0.0/16"] } }] }])],
    conn(9000),
    false,
    /no rule/,
  ],
  [
    "DENY notIpBlocks: outside denied",
    [policy("DENY", [{ from: [{ source: { notIpBlocks: ["10.1.0.0/16"] } }] }])],
    conn(9000),
    false,
    /DENY/,
  ],
  [
    "ALLOW remoteIpBlocks: remote address decides",
    [policy("ALLOW", [{ from: [{ source: { remoteIpBlocks: ["192.0.2.0/24"] } }] }])],
    conn(9000, { remoteIp: "192.0.2.7" }),
    true,
    /ALLOW/,
  ],
  [
    "DENY from another policy wins over ALLOW",
    [
      policy("ALLOW", [ports("9000")], "a"),
      policy("DENY", [{ from: [{ source: { namespaces: ["foo"] } }] }], "b"),
    ],
    conn(9000),
    false,
    /DENY policy foo\/b/,
  ],
  [
    "ALLOW: a dropped rule and an L4 rule of two policies; the L4 one allows",
    [
      policy("ALLOW", [{ to: [{ operation: { hosts: ["x"] } }] }], "a"),
      policy("ALLOW", [ports("9000")], "b"),
    ],
    conn(9000),
    true,
    /ALLOW policy foo\/b rule 0/,
  ],
];

for (const [label, policies, connection, allowed, reason] of CASES) {
  Deno.test(`evaluateConnection: ${label}`, () => {
    const d = authorizeConnection(policies, connection);
    assert.equal(d.allowed, allowed, d.reason);
    assert.match(d.reason, reason);
  });
}

Deno.test("evaluateConnection: the HTTP path keeps the HTTP-only fields (ALLOW methods GET allows GET)", () => {
  const c = compileAuthorization([
    policy("ALLOW", [{ to: [{ operation: { methods: ["GET"], ports: ["9000"] } }] }]),
  ]);
  assert.equal(c.evaluate({ method: "GET", path: "/", port: 9000 }).allowed, true);
  assert.equal(c.evaluate({ method: "POST", path: "/", port: 9000 }).allowed, false);
  assert.equal(c.evaluateConnection(conn(9000)).allowed, false);
});

Deno.test("evaluateConnection: AUDIT ignores HTTP-only fields and reports the match", () => {
  const d = authorizeConnection([policy("AUDIT", [{ to: [{ operation: { paths: ["/x"] } }] }])], conn(9000));
  assert.equal(d.allowed, true);
  assert.deepEqual(d.audit, { policy: { namespace: "foo", name: "tcp-policy" }, ruleIndex: 0 });
});

Deno.test("evaluateConnection: CUSTOM is refused as on HTTP", () => {
  assert.throws(() => authorizeConnection([policy("CUSTOM", [{}])], conn(9000)), /CUSTOM/);
});

const FIELDS: [AuthorizationRuleView, string[]][] = [
  [{}, []],
  [ports("9000"), []],
  [{
    from: [{
      source: { principals: ["a"], namespaces: ["b"], ipBlocks: ["1.2.3.4"], remoteIpBlocks: ["1.2.3.4"] },
    }],
  }, []],
  [{ from: [{ source: { serviceAccounts: ["a"], trustDomains: ["td"], notPrincipals: ["x"] } }] }, []],
  [{ from: [{ source: { requestPrincipals: ["a/b"] } }, { source: { notRequestPrincipals: ["*"] } }] }, [
    "from[0].source.requestPrincipals",
    "from[1].source.notRequestPrincipals",
  ]],
  [{
    to: [{
      operation: {
        hosts: ["h"],
        notHosts: ["h"],
        methods: ["GET"],
        notMethods: ["P"],
        paths: ["/"],
        notPaths: ["/"],
        ports: ["1"],
      },
    }],
  }, [
    "to[0].operation.hosts",
    "to[0].operation.notHosts",
    "to[0].operation.methods",
    "to[0].operation.notMethods",
    "to[0].operation.paths",
    "to[0].operation.notPaths",
  ]],
  [{ to: [{ operation: { methods: [] } }] }, []],
  [{ when: [{ key: "source.ip", values: ["1.2.3.4"] }, { key: "request.auth.principal", values: ["a"] }] }, [
    "when[1] request.auth.principal",
  ]],
  [{ when: [{ key: "connection.sni", values: ["x"] }, { key: "destination.port", values: ["1"] }] }, []],
  [{ when: [{ key: "request.headers[x]", notValues: ["y"] }] }, ["when[0] request.headers[x]"]],
];

for (const [rule, fields] of FIELDS) {
  Deno.test(`httpOnlyFields: ${JSON.stringify(rule)}`, () => {
    assert.deepEqual(httpOnlyFields(rule), fields);
    assert.deepEqual(httpOnlyFields(withoutHttpOnlyFields(rule)), []);
  });
}

Deno.test("withoutHttpOnlyFields keeps the L4 fields", () => {
  const rule: AuthorizationRuleView = {
    from: [{ source: { namespaces: ["foo"], requestPrincipals: ["*"] } }],
    to: [{ operation: { ports: ["9000"], methods: ["GET"] } }],
    when: [{ key: "source.ip", values: ["10.0.0.1"] }, { key: "request.headers[x]", values: ["y"] }],
  };
  assert.deepEqual(withoutHttpOnlyFields(rule), {
    from: [{ source: { namespaces: ["foo"] } }],
    to: [{ operation: { ports: ["9000"] } }],
    when: [{ key: "source.ip", values: ["10.0.0.1"] }],
  });
});

Deno.test("tcpRuleWarnings: ALLOW dropped, DENY ignored, L4 rules and empty policies silent", () => {
  const w = tcpRuleWarnings([
    policy("ALLOW", [ports("9000"), { to: [{ operation: { methods: ["GET"] } }] }], "a"),
    policy("DENY", [{ to: [{ operation: { paths: ["/admin"], ports: ["9001"] } }] }], "b"),
    policy(undefined as unknown as string, [{ when: [{ key: "request.headers[x]", values: ["y"] }] }], "c"),
    policy("DENY", undefined, "d"),
  ], "workload foo/tcp-echo port 9000 (TCP)");
  assert.deepEqual(w.map((x) => [x.policy.name, x.action, x.ruleIndex, x.effect, x.fields]), [
    ["a", "ALLOW", 1, "dropped", ["to[0].operation.methods"]],
    ["b", "DENY", 0, "ignored", ["to[0].operation.paths"]],
    ["c", "ALLOW", 0, "dropped", ["when[0] request.headers[x]"]],
  ]);
  assert.match(
    w[0].message,
    /^AuthorizationPolicy foo\/a \(ALLOW\) spec\.rules\[1\] has HTTP-only fields \(to\[0\]\.operation\.methods\) and applies to workload foo\/tcp-echo port 9000 \(TCP\): the rule is dropped/,
  );
  assert.match(w[1].message, /ignored there \(the rule matches more connections\)$/);
});

const EFFECTS: [string | undefined, string][] = [
  [undefined, "dropped"],
  ["", "dropped"],
  ["ALLOW", "dropped"],
  ["DENY", "ignored"],
  ["AUDIT", "ignored"],
  ["CUSTOM", "ignored"],
];

for (const [action, effect] of EFFECTS) {
  Deno.test(`tcpRuleEffect: ${action === undefined ? "(unset)" : JSON.stringify(action)} is ${effect}`, () => {
    assert.equal(tcpRuleEffect(action), effect);
  });
}
