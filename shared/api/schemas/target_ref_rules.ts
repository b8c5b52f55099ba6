/**
 * `targetRef`/`targetRefs` attach Istio policies to Kubernetes Gateway API objects and waypoints,
 * which this mesh does not have; a policy relying on them would silently apply to nothing, so it
 * is rejected instead.
 *
 * @module
 */
import { error, type Finding } from "../finding.ts";

/** Rejects `targetRef` and `targetRefs`: one error for each that is set. */
export function checkTargetRefsUnsupported(spec: { targetRef?: unknown; targetRefs?: unknown }): Finding[] {
  const out: Finding[] = [];
  for (const field of ["targetRef", "targetRefs"] as const) {
    if (spec[field] !== undefined) {
      out.push(error(
        ["spec", field],
        `${field} is not supported: this mesh has no Kubernetes Gateway API or waypoints; use selector.matchLabels`,
      ));
    }
  }
  return out;
}
