/**
 * Which workloads an AuthorizationPolicy or RequestAuthentication applies to. Source: Istio's
 * reference for both kinds, `selector`: "The selector will match with workloads in the same
 * namespace as the policy. If the policy is in the root namespace, the selector will additionally
 * match with workloads in all namespaces"; no selector means every workload in scope (the namespace,
 * or the whole mesh for the root namespace). PeerAuthentication differs (a selector in the root
 * namespace is ignored): see effectivePeerAuthentication.
 *
 * @module
 */

/** The workload a policy might apply to. */
export interface SelectableWorkload {
  /** The workload's namespace. */
  namespace: string;
  /** The workload's labels. */
  labels: Readonly<Record<string, string>>;
}

/** The parts of a policy that decide where it applies. */
export interface SelectingPolicy {
  /** The policy's metadata; a missing namespace is `default`. */
  metadata: { namespace?: string };
  /** The policy's spec; only the selector matters here. */
  spec?: { selector?: { matchLabels?: Record<string, string> } };
}

/** Options of {@link policyAppliesTo}. */
export interface PolicyAppliesToOptions {
  /** The mesh root namespace; default `mesh-system`. */
  rootNamespace?: string;
}

/** Whether every label of `selector` is on the workload with the same value. */
export function labelsMatch(
  selector: Readonly<Record<string, string>> | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return true;
  for (const key in selector) {
    if (!Object.hasOwn(labels, key) || labels[key] !== selector[key]) return false;
  }
  return true;
}

/**
 * Whether an AuthorizationPolicy or RequestAuthentication applies to a workload.
 *
 * @returns true when the policy is in the workload's namespace or the root namespace, and its
 *   selector (if any) matches the workload's labels
 */
export function policyAppliesTo(
  policy: SelectingPolicy,
  workload: SelectableWorkload,
  options: PolicyAppliesToOptions = {},
): boolean {
  const namespace = policy.metadata.namespace ?? "default";
  const root = options.rootNamespace ?? "mesh-system";
  if (namespace !== workload.namespace && namespace !== root) return false;
  return labelsMatch(policy.spec?.selector?.matchLabels, workload.labels);
}
