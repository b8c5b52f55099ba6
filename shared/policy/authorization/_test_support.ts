/**
 * The rows of the matcher tests (field_matchers_test.ts, condition_matchers_test.ts): a base
 * request, the requests that differ from it in one attribute, the field and key builders, and the
 * runners that check each field with both outcomes, in its plain and `not` form, under ALLOW and
 * DENY. Test-only: excluded from the JSR package.
 *
 * @module
 */
import assert from "node:assert/strict";
import { authorize, compileAuthorization } from "./evaluate.ts";
import type { AuthorizationPolicyView, AuthorizationRuleView } from "./policy_view.ts";
import type { AuthorizationRequest } from "./request.ts";

export const base: AuthorizationRequest = {
  method: "GET",
  path: "/headers",
  host: "httpbin.foo:8000",
  port: 8000,
  sourcePrincipal: "spiffe://cluster.local/ns/foo/sa/sleep",
  sourceIp: "10.0.0.5",
  destinationIp: "10.0.0.9",
};
export const ISS = "testing@secure.istio.io";

export type Overrides = Partial<AuthorizationRequest>;
/** A request: a label for the test name and what differs from `base`. */
export type Row = [label: string, overrides: Overrides];

export const peer = (id: string | undefined): Row => [`peer ${id ?? "plain text"}`, { sourcePrincipal: id }];
export const plainText: Row = peer(undefined);
/** A verified token with these claims (`iss` and `sub` default to the test issuer). */
export const token = (label: string, claims: Record<string, unknown> = {}): Row => {
  const c = { iss: ISS, sub: ISS, aud: ["app", "web"], azp: "frontend", ...claims };
  return [`token ${label}`, { requestPrincipal: `${c.iss}/${c.sub}`, claims: c }];
};
export const noToken: Row = ["no token", {}];

/** A field or key, its rule in plain and `not` form, and requests on either side. */
export interface FieldCase {
  name: string;
  rule: AuthorizationRuleView;
  /** The same values in the `not` field, or undefined when the rule has no such form. */
  notRule?: AuthorizationRuleView;
  matching: Row[];
  notMatching: Row[];
}

/** `principals` → `notPrincipals`. */
export const notOf = (name: string): string => `not${name[0].toUpperCase()}${name.slice(1)}`;
export const source = (
  name: string,
  values: string[],
): { rule: AuthorizationRuleView; notRule: AuthorizationRuleView } => ({
  rule: { from: [{ source: { [name]: values } }] },
  notRule: { from: [{ source: { [notOf(name)]: values } }] },
});
export const operation = (
  name: string,
  values: string[],
): { rule: AuthorizationRuleView; notRule: AuthorizationRuleView } => ({
  rule: { to: [{ operation: { [name]: values } }] },
  notRule: { to: [{ operation: { [notOf(name)]: values } }] },
});
export const condition = (
  key: string,
  values: string[],
): { rule: AuthorizationRuleView; notRule: AuthorizationRuleView } => ({
  rule: { when: [{ key, values }] },
  notRule: { when: [{ key, notValues: values }] },
});

export const PRINCIPAL_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/foo/sa/sleep")] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/foo/sa/other"),
    peer("spiffe://other.td/ns/foo/sa/sleep"),
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    plainText,
  ],
};
export const NAMESPACE_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/foo/sa/other")] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    peer("spiffe://cluster.local/ns/bar/sa/foo"),
    peer("spiffe://cluster.local/ns/foobar/sa/sleep"),
    plainText,
  ],
};
export const SERVICE_ACCOUNT_ROWS = {
  matching: [["base", {}]] as Row[],
  notMatching: [
    peer("spiffe://cluster.local/ns/bar/sa/sleep"),
    peer("spiffe://cluster.local/ns/foo/sa/sleepy"),
    peer("spiffe://cluster.local/ns/foo/sa/other"),
    plainText,
  ],
};
export const TRUST_DOMAIN_ROWS = {
  matching: [["base", {}], peer("spiffe://cluster.local/ns/bar/sa/x")] as Row[],
  notMatching: [
    peer("spiffe://cluster.localhost/ns/foo/sa/sleep"),
    peer("spiffe://other.td/ns/foo/sa/sleep"),
    plainText,
  ],
};
/** The peer is 10.0.0.5; the others hold 10.0.0.5 in turn where the peer does not. */
export const SOURCE_IP_ROWS = {
  matching: [["base", {}], ["peer 10.0.0.5, remote 1.2.3.4", { remoteIp: "1.2.3.4" }]] as Row[],
  notMatching: [
    ["peer 10.0.0.6", { sourceIp: "10.0.0.6" }],
    ["peer 10.0.0.6, destination 10.0.0.5", { sourceIp: "10.0.0.6", destinationIp: "10.0.0.5" }],
    ["peer 10.0.0.6, remote 10.0.0.5", { sourceIp: "10.0.0.6", remoteIp: "10.0.0.5" }],
    ["no peer address", { sourceIp: undefined }],
  ] as Row[],
};
export const REMOTE_IP_ROWS = {
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
export const REQUEST_PRINCIPAL_ROWS = {
  matching: [token("of the issuer")],
  notMatching: [
    noToken,
    token("of another issuer", { iss: "other" }),
    token("of another subject", { sub: "someone" }),
  ],
};

export const policy = (action: string, rule: AuthorizationRuleView): AuthorizationPolicyView => ({
  namespace: "foo",
  name: action.toLowerCase(),
  action,
  rules: [rule],
});

export function check(
  rule: AuthorizationRuleView,
  action: "ALLOW" | "DENY",
  o: Overrides,
  matches: boolean,
): void {
  const request = { ...base, ...o };
  const d = authorize([policy(action, rule)], request);
  assert.equal(d.allowed, action === "ALLOW" ? matches : !matches, d.reason);
  // The linear evaluator too: the index could hide a matcher's bug by not offering the rule.
  const linear = compileAuthorization([policy(action, rule)], { index: false }).evaluate(request);
  assert.equal(linear.allowed, d.allowed, `linear: ${linear.reason}`);
}

/** One `Deno.test` per row of each field: both outcomes, plain and `not` form, ALLOW and DENY. */
export function testFieldCases(fields: readonly FieldCase[]): void {
  for (const f of fields) {
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
}

/** A bad value, the rule that holds it, and the error compiling must throw. */
export type BadValue = [name: string, rule: AuthorizationRuleView, message: RegExp];

/** One `Deno.test` per bad value: compiling refuses it under ALLOW and DENY, naming the field. */
export function testBadValues(values: readonly BadValue[]): void {
  for (const [name, rule, message] of values) {
    Deno.test(`compileAuthorization refuses ${name}`, () => {
      for (const action of ["ALLOW", "DENY"]) {
        assert.throws(
          () => compileAuthorization([policy(action, rule)]),
          (e: unknown) => e instanceof RangeError && message.test(e.message),
        );
      }
    });
  }
}
