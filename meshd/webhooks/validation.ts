/**
 * The validating webhook's decision (Istio's `validation.istio.io`, pkg/webhooks/validation/server):
 * the object is checked by shared's `validateText`, the very validator behind `meshctl validate`
 * and meshd's config store, so the three accept and refuse the same resources with the same field
 * and reason. Kinds that are not mesh resources are allowed untouched (the webhook configuration
 * should not send them, but an over-broad rule must not block the cluster). Pure.
 *
 * @module
 */
import { validateText, type ValidationIssue } from "../../shared/mod.ts";
import type { AdmissionDecision, AdmissionRequest } from "./admission.ts";

/** The decision and what to count. */
export interface ValidationOutcome {
  decision: AdmissionDecision;
  /** `passed` and `failed` count in cfgvalidator_validation_*; `ignored` is not a mesh resource or not a write. */
  result: "passed" | "failed" | "ignored";
  /** `Kind` of the object, the metrics' label. */
  kind: string;
}

/** One issue as `meshctl validate` words it, without the file and line (the object has neither). */
export function issueText(issue: ValidationIssue): string {
  return [issue.resource, issue.field, issue.message].filter((p) => p !== undefined && p !== "").join(": ");
}

/**
 * Validates the object of one AdmissionRequest.
 *
 * @param rootNamespace the mesh's root namespace (policies there apply mesh-wide)
 */
export function validateAdmission(request: AdmissionRequest, rootNamespace: string): ValidationOutcome {
  const kind = request.kind.kind;
  if ((request.operation !== "CREATE" && request.operation !== "UPDATE") || !request.object) {
    return { decision: { allowed: true }, result: "ignored", kind };
  }
  const result = validateText(
    JSON.stringify(request.object),
    `${kind} ${request.namespace}/${request.name}`,
    {
      rootNamespace,
      defaultNamespace: request.namespace || "default",
    },
  );
  const errors = result.issues.filter((i) => i.severity === "error");
  const warnings = result.issues.filter((i) => i.severity !== "error").map(issueText);
  if (errors.length > 0) {
    return {
      decision: {
        allowed: false,
        code: 400,
        message: `configuration is invalid: ${errors.map(issueText).join("; ")}`,
        warnings,
      },
      result: "failed",
      kind,
    };
  }
  return {
    decision: { allowed: true, warnings },
    result: result.resources.length > 0 ? "passed" : "ignored",
    kind,
  };
}
