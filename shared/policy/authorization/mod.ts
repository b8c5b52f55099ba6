/**
 * AuthorizationPolicy evaluation (policies seed "Authorization"; Istio's authorization-policy
 * reference and conditions list), shared by the proxy (every inbound request) and meshctl.
 *
 * @example
 * ```ts
 * import { authorize } from "@mesh/shared";
 * const d = authorize(
 *   [{ namespace: "foo", name: "deny-admin", action: "DENY", rules: [{ to: [{ operation: { paths: ["/admin*"] } }] }] }],
 *   { method: "GET", path: "/admin/x", port: 8000 },
 * );
 * // d.allowed === false, d.reason === "denied by DENY policy foo/deny-admin rule 0"
 * ```
 *
 * @module
 */
export {
  applicableAuthorizationPolicies,
  type ApplicableAuthorizationPolicy,
  type ApplicableOptions,
  authorizationPolicyView,
  type AuthorizationScope,
  mergeByAction,
  type MergedAuthorizationPolicies,
} from "./applicable.ts";
export type {
  AuthorizationOperationView,
  AuthorizationPolicyView,
  AuthorizationRuleView,
  AuthorizationSourceView,
  AuthorizationValueList,
} from "./policy_view.ts";
export {
  authorize,
  authorizeConnection,
  compileAuthorization,
  CompiledAuthorization,
  type CompileOptions,
} from "./evaluate.ts";
export { type NormalizedPath, normalizePath, PathError } from "./path.ts";
export type {
  AuthorizationConnection,
  AuthorizationDecision,
  AuthorizationPolicyRef,
  AuthorizationRequest,
} from "./request.ts";
export {
  httpOnlyFields,
  isHttpOnlyConditionKey,
  type TcpRuleEffect,
  tcpRuleEffect,
  type TcpRuleWarning,
  tcpRuleWarnings,
  withoutHttpOnlyFields,
} from "./tcp_rules.ts";
