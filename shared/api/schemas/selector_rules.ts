/**
 * Checks shared by every kind that has a workload selector (Istio's validateWorkloadSelector).
 *
 * @module
 */
import { error, type FieldPath, type Finding, warning } from "../finding.ts";

/**
 * Validates `selector.matchLabels`: no empty keys, no wildcards; an empty selector is a warning
 * because it selects every workload, like no selector at all.
 */
export function checkWorkloadSelector(
  selector: { matchLabels?: Record<string, string> } | undefined,
  at: FieldPath,
): Finding[] {
  if (selector === undefined || selector === null || typeof selector !== "object") return [];
  const out: Finding[] = [];
  const labels = selector.matchLabels ?? {};
  for (const [k, v] of Object.entries(labels)) {
    if (k === "") out.push(error([...at, "matchLabels", k], "empty label key is not allowed"));
    if (k.includes("*") || String(v).includes("*")) {
      out.push(error([...at, "matchLabels", k], `wildcards are not supported in selectors: "${k}=${v}"`));
    }
  }
  if (Object.keys(labels).length === 0) {
    out.push(warning(at, "workload selector has no labels, so it selects every workload in scope"));
  }
  return out;
}

/** Whether a selector names at least one label (Istio treats an empty selector like none). */
export function hasSelectorLabels(selector: { matchLabels?: Record<string, string> } | undefined): boolean {
  return !!selector?.matchLabels && Object.keys(selector.matchLabels).length > 0;
}
