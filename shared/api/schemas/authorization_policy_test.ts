import assert from "node:assert/strict";
import { parse } from "yaml";
import { validateResource } from "../validate_resource.ts";
import { AUTHORIZATION_ACTIONS, authorizationPolicy } from "./authorization_policy.ts";
import {
  allow,
  assertFindings,
  type AuthorizationCase,
  deny,
  err,
  type ExpectedFinding as Expected,
  fromSource,
  OP,
  R0,
  SELECTOR,
  SRC,
  testAuthorizationCases,
  toOperation,
  warn,
} from "./_test_support.ts";

// ---------------------------------------------------------------------------------------------
// action, provider, rules
// ---------------------------------------------------------------------------------------------

const actionCases: AuthorizationCase[] = [
  { name: "spec {} is valid (ALLOW nothing)", spec: {}, want: [] },
  { name: "rules [{}] is valid (ALLOW everything)", spec: { rules: [{}] }, want: [] },
  ...AUTHORIZATION_ACTIONS.filter((a) => a !== "CUSTOM").map((action): AuthorizationCase => ({
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
// DENY with only HTTP attributes
// ---------------------------------------------------------------------------------------------

const DENY_HTTP_ONLY = "this DENY rule uses only HTTP attributes, so it denies all traffic to TCP ports";

const denyCases: AuthorizationCase[] = [
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

const otherCases: AuthorizationCase[] = [
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

testAuthorizationCases([...actionCases, ...denyCases, ...otherCases]);

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
