import assert from "node:assert/strict";
import type { AuthorizationPolicySpec } from "../../../shared/mod.ts";
import { rbacFilters, rbacPolicies } from "./rbac.ts";
import { decodeEnvoy, ENVOY_TYPES } from "../../../shared/internal/xds/envoy_types.ts";

const view = (spec: AuthorizationPolicySpec) => ({
  key: "ns/p",
  name: "p",
  namespace: "ns",
  metadata: { namespace: "ns", name: "p" },
  spec,
});
type Rule = NonNullable<AuthorizationPolicySpec["rules"]>[number];
const ANY = { any: true };
const caller = { authenticated: { principalName: { exact: "spiffe://cluster.local/ns/a/sa/b" } } };

const CASES: { name: string; rule: Rule; deny: boolean; want: Record<string, unknown> | undefined }[] = [
  {
    name: "empty rule matches everything",
    rule: {},
    deny: false,
    want: { permissions: [ANY], principals: [ANY] },
  },
  {
    name: "principal: spiffe:// added",
    rule: { from: [{ source: { principals: ["cluster.local/ns/a/sa/b"] } }] },
    deny: false,
    want: { permissions: [ANY], principals: [{ andIds: { ids: [caller] } }] },
  },
  {
    name: "principal prefix and any",
    rule: { from: [{ source: { principals: ["cluster.local/ns/a/*", "*"] } }] },
    deny: false,
    want: {
      permissions: [ANY],
      principals: [{
        andIds: {
          ids: [{
            orIds: {
              ids: [
                { authenticated: { principalName: { prefix: "spiffe://cluster.local/ns/a/" } } },
                { authenticated: {} },
              ],
            },
          }],
        },
      }],
    },
  },
  {
    name: "namespaces as a SPIFFE regex; notNamespaces negated",
    rule: { from: [{ source: { namespaces: ["a.b"], notNamespaces: ["c"] } }] },
    deny: false,
    want: {
      permissions: [ANY],
      principals: [{
        andIds: {
          ids: [{
            andIds: {
              ids: [
                { authenticated: { principalName: { safeRegex: { regex: "spiffe://[^/]+/ns/a\\.b/.*" } } } },
                {
                  notId: {
                    authenticated: { principalName: { safeRegex: { regex: "spiffe://[^/]+/ns/c/.*" } } },
                  },
                },
              ],
            },
          }],
        },
      }],
    },
  },
  {
    name: "paths, methods and ports",
    rule: { to: [{ operation: { paths: ["/echo.Echo/*", "/x"], methods: ["POST"], ports: ["7070"] } }] },
    deny: false,
    want: {
      permissions: [{
        andRules: {
          rules: [{
            andRules: {
              rules: [
                { header: { name: ":method", stringMatch: { exact: "POST" } } },
                {
                  orRules: {
                    rules: [
                      { urlPath: { path: { prefix: "/echo.Echo/" } } },
                      { urlPath: { path: { exact: "/x" } } },
                    ],
                  },
                },
                { destinationPort: 7070 },
              ],
            },
          }],
        },
      }],
      principals: [ANY],
    },
  },
  {
    name: "ALLOW: a rule with requestPrincipals is dropped (allows less)",
    rule: { from: [{ source: { requestPrincipals: ["iss/sub"] } }] },
    deny: false,
    want: undefined,
  },
  {
    name: "DENY: requestPrincipals is left out (denies more)",
    rule: { from: [{ source: { requestPrincipals: ["iss/sub"], principals: ["cluster.local/ns/a/sa/b"] } }] },
    deny: true,
    want: { permissions: [ANY], principals: [{ andIds: { ids: [caller] } }] },
  },
  {
    name: "ALLOW: hosts are not translated: dropped",
    rule: { to: [{ operation: { hosts: ["x"] } }] },
    deny: false,
    want: undefined,
  },
  {
    name: "when: a header and destination.port",
    rule: {
      when: [{ key: "request.headers[x-a]", values: ["v"] }, { key: "destination.port", values: ["80"] }],
    },
    deny: false,
    want: {
      permissions: [{ andRules: { rules: [{ destinationPort: 80 }] } }],
      principals: [{ andIds: { ids: [{ header: { name: "x-a", stringMatch: { exact: "v" } } }] } }],
    },
  },
  {
    name: "ALLOW: an unknown condition key drops the rule",
    rule: { when: [{ key: "request.auth.claims[iss]", values: ["x"] }] },
    deny: false,
    want: undefined,
  },
];

for (const c of CASES) {
  Deno.test(`rbacPolicies: ${c.name}`, () => {
    const got = rbacPolicies([view({ rules: [c.rule] })], c.deny);
    assert.deepEqual(got["ns.p[0]"], c.want);
  });
}

Deno.test("rbacFilters: DENY before ALLOW; an ALLOW policy without rules denies everything", () => {
  const filters = rbacFilters([
    view({ action: "ALLOW" }),
    { ...view({ action: "DENY", rules: [{}] }), name: "d" },
  ]);
  assert.deepEqual(filters.map((f) => f.name), [
    "envoy.filters.http.rbac.deny",
    "envoy.filters.http.rbac.allow",
  ]);
  const allow = filters[1].typedConfig as { value: Uint8Array };
  assert.deepEqual(decodeEnvoy(ENVOY_TYPES.rbac, allow.value), { rules: { action: "ALLOW" } });
  assert.deepEqual(rbacFilters([]), []);
});
