/**
 * Which AuthorizationPolicies apply to a workload, merged into one list per action: what meshd sends
 * a proxy, what the proxy evaluates, and what `meshctl experimental authz check` shows (the merged
 * result of mesh-, namespace- and workload-level policies, meshctl seed "authz").
 *
 * @module
 */
import type { AuthorizationPolicy } from "../../api/types.gen.ts";
import { DEFAULT_POLICY_NAMESPACE } from "../peer_authentication.ts";
import { policyAppliesTo, type SelectableWorkload } from "../workload_selection.ts";
import type { AuthorizationPolicyView } from "./policy_view.ts";

/** Where a policy applies: mesh-wide (root namespace, no selector), namespace-wide, or by selector. */
export type AuthorizationScope = "GLOBAL" | "NAMESPACE" | "WORKLOAD_SELECTOR";

/** A policy that applies, with its scope. */
export interface ApplicableAuthorizationPolicy extends AuthorizationPolicyView {
  /** Its action after defaulting: ALLOW, DENY, AUDIT (or CUSTOM, which evaluation refuses). */
  action: string;
  /** Where it applies. */
  scope: AuthorizationScope;
}

/** The policies that apply to one workload, by action, each in namespace/name order. */
export interface MergedAuthorizationPolicies {
  /** Every applicable policy, in namespace/name order. */
  all: ApplicableAuthorizationPolicy[];
  /** DENY policies. */
  deny: ApplicableAuthorizationPolicy[];
  /** ALLOW policies. */
  allow: ApplicableAuthorizationPolicy[];
  /** AUDIT policies. */
  audit: ApplicableAuthorizationPolicy[];
  /** CUSTOM policies (not supported yet: evaluation refuses them). */
  custom: ApplicableAuthorizationPolicy[];
}

/** Options of {@link applicableAuthorizationPolicies}. */
export interface ApplicableOptions {
  /** The mesh root namespace; default `mesh-system`. */
  rootNamespace?: string;
}

/**
 * An AuthorizationPolicy resource (YAML) as the evaluator reads it.
 *
 * @param policy a validated resource; a missing namespace is `default`
 */
export function authorizationPolicyView(
  policy: Pick<AuthorizationPolicy, "metadata" | "spec">,
): AuthorizationPolicyView {
  return {
    namespace: policy.metadata.namespace ?? DEFAULT_POLICY_NAMESPACE,
    name: policy.metadata.name,
    action: policy.spec?.action ?? "ALLOW",
    rules: policy.spec?.rules ?? [],
  };
}

/**
 * The AuthorizationPolicies that apply to a workload (policies of its namespace and of the root
 * namespace whose selector matches its labels; see {@link policyAppliesTo}), merged by action.
 *
 * @param policies every AuthorizationPolicy known (validated resources)
 * @param workload the workload's namespace and labels
 */
export function applicableAuthorizationPolicies(
  policies: readonly Pick<AuthorizationPolicy, "metadata" | "spec">[],
  workload: SelectableWorkload,
  options: ApplicableOptions = {},
): MergedAuthorizationPolicies {
  const root = options.rootNamespace ?? "mesh-system";
  const all = policies
    .filter((p) => policyAppliesTo(p, workload, { rootNamespace: root }))
    .map((p): ApplicableAuthorizationPolicy => {
      const view = authorizationPolicyView(p);
      const withSelector = Object.keys(p.spec?.selector?.matchLabels ?? {}).length > 0;
      const scope = withSelector ? "WORKLOAD_SELECTOR" : view.namespace === root ? "GLOBAL" : "NAMESPACE";
      return { ...view, action: view.action ?? "ALLOW", scope };
    });
  return mergeByAction(all);
}

/**
 * Merges policies that apply to one workload (what meshd sent a proxy, or
 * {@link applicableAuthorizationPolicies} found) into one list per action, each in namespace/name order.
 */
export function mergeByAction(
  policies: readonly ApplicableAuthorizationPolicy[],
): MergedAuthorizationPolicies {
  const all = [...policies].sort((a, b) => {
    const ka = `${a.namespace}/${a.name}`;
    const kb = `${b.namespace}/${b.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const by = (action: string) => all.filter((p) => p.action === action);
  return { all, deny: by("DENY"), allow: by("ALLOW"), audit: by("AUDIT"), custom: by("CUSTOM") };
}
