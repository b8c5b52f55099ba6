/**
 * What a validation rule reports. A finding points at a field by its path inside the resource
 * (the same path the YAML loader maps to a line), so every message can name file, line and field.
 *
 * @module
 */

/** A path into a resource, e.g. `["spec", "rules", 0, "when", 1, "key"]`. */
export type FieldPath = readonly (string | number)[];

/** How serious a finding is: an error rejects the resource; a warning keeps it. */
export type Severity = "error" | "warning";

/** One problem found in one resource. */
export interface Finding {
  /** The field the finding is about; the empty path means the whole resource. */
  path: FieldPath;
  /** The reason, as a sentence fragment without a trailing period. */
  message: string;
  /** Errors reject the resource; warnings are reported and the resource is kept. */
  severity: Severity;
}

/** Facts a rule needs beyond the resource itself. */
export interface RuleContext {
  /** The mesh root namespace (Istio's meshConfig.rootNamespace); default `mesh-system`. */
  rootNamespace: string;
}

/** The default root namespace, as in the policies seed. */
export const DEFAULT_ROOT_NAMESPACE = "mesh-system";

/** Shorthand for an error finding. */
export function error(path: FieldPath, message: string): Finding {
  return { path, message, severity: "error" };
}

/** Shorthand for a warning finding. */
export function warning(path: FieldPath, message: string): Finding {
  return { path, message, severity: "warning" };
}

/**
 * Formats a field path the way users write it: `spec.rules[0].when[1].key`,
 * `spec.portLevelMtls[8080].mode`, `spec.selector.matchLabels["app.kubernetes.io/name"]`.
 */
export function formatFieldPath(path: FieldPath): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number" || /^[0-9]+$/.test(seg)) out += `[${seg}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(seg)) out += out === "" ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}
