/**
 * Kubernetes' metav1.LabelSelector (`matchLabels` and `matchExpressions` with In, NotIn, Exists,
 * DoesNotExist), as the API server applies a webhook's namespaceSelector and objectSelector. Shared by
 * the test API server's admission and `meshctl x check-inject`.
 *
 * @module
 */

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Whether `labels` match `selector`; an absent or empty selector matches everything, an unknown
 * operator nothing (as the API server, which refuses such a selector).
 */
export function labelSelectorMatches(selector: unknown, labels: Record<string, string>): boolean {
  if (!isObject(selector)) return true;
  const ml = isObject(selector.matchLabels) ? selector.matchLabels : {};
  for (const [k, v] of Object.entries(ml)) if (labels[k] !== v) return false;
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions.filter(isObject) : [];
  return exprs.every((e) => {
    const key = typeof e.key === "string" ? e.key : "";
    const values = Array.isArray(e.values) ? e.values.filter((v): v is string => typeof v === "string") : [];
    const present = Object.hasOwn(labels, key);
    switch (e.operator) {
      case "In":
        return present && values.includes(labels[key]);
      case "NotIn":
        return !present || !values.includes(labels[key]);
      case "Exists":
        return present;
      case "DoesNotExist":
        return !present;
      default:
        return false;
    }
  });
}
