/**
 * Output of `meshctl experimental authz check` and `explain`: the short form (a table of the
 * merged policies, one line per rule; the decision and its reason) and the structured form
 * (`-o json|yaml`).
 *
 * @module
 */
import type {
  AuthorizationDecision,
  AuthorizationRequest,
  AuthorizationRuleView,
  MergedAuthorizationPolicies,
} from "../../shared/mod.ts";
import { table } from "../output.ts";
import { normalizationText, type NormalizedRequestPath } from "./path_normalization.ts";
import type { AuthzWorkload } from "./workload.ts";

const list = (v: unknown): string => Array.isArray(v) ? `[${v.join(",")}]` : String(v);

function fields(part: object | null | undefined): string {
  // Empty lists are absent fields: a config dump carries them decoded from protobuf, YAML leaves them out.
  return Object.entries(part ?? {}).filter(([, v]) =>
    v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0)
  )
    .map(([k, v]) => `${k}=${list(v)}`).join(" ");
}

/**
 * One line for a rule, e.g. `from: principals=[a] | to: methods=[GET] | when: request.headers[x-token] notValues=[admin]`;
 * `|` separates alternatives (any `from` source, any `to` operation), `,` conditions (all must hold).
 */
export function ruleSummary(rule: AuthorizationRuleView): string {
  const parts: string[] = [];
  const from = (rule.from ?? []).map((f) => fields(f.source));
  if (from.length > 0) parts.push(`from: ${from.join(" | ")}`);
  const to = (rule.to ?? []).map((t) => fields(t.operation));
  if (to.length > 0) parts.push(`to: ${to.join(" | ")}`);
  const when = (rule.when ?? []).map((c) =>
    `${c.key} ${fields({ values: c.values, notValues: c.notValues })}`
  );
  if (when.length > 0) parts.push(`when: ${when.join(", ")}`);
  return parts.length > 0 ? parts.join("; ") : "any request";
}

function workloadText(w: AuthzWorkload): string {
  const labels = Object.entries(w.labels).map(([k, v]) => `${k}=${v}`).join(",");
  return `${w.name ? `${w.name}.${w.namespace}` : `namespace ${w.namespace}`} (labels ${labels || "none"})`;
}

/** The short form of `check`: the workload, a table of the policies, then each rule's summary. */
export function checkText(workload: AuthzWorkload, merged: MergedAuthorizationPolicies): string {
  const head = `Checked workload ${
    workloadText(workload)
  }: ${merged.all.length} AuthorizationPolicies apply\n`;
  if (merged.all.length === 0) return head;
  const rows = merged.all.map((
    p,
  ) => [p.action, p.scope, `${p.name}.${p.namespace}`, String(p.rules?.length ?? 0)]);
  const rules = merged.all.flatMap((p) => {
    const rs = p.rules ?? [];
    if (rs.length === 0) return [`${p.name}.${p.namespace}: no rules (matches nothing)\n`];
    return rs.map((r, i) => `${p.name}.${p.namespace} rule ${i}: ${ruleSummary(r)}\n`);
  });
  return head + table(["ACTION", "SCOPE", "AuthorizationPolicy", "RULES"], rows) + "\n" + rules.join("");
}

/** The structured form of `check`. */
export function checkValue(
  workload: AuthzWorkload,
  merged: MergedAuthorizationPolicies,
): { workload: AuthzWorkload; policies: MergedAuthorizationPolicies["all"] } {
  return { workload, policies: merged.all };
}

/** What `explain` reports. */
export interface Explanation {
  workload: AuthzWorkload;
  request: AuthorizationRequest;
  decision: AuthorizationDecision;
  /** The deciding rule's summary, when a rule decided. */
  rule?: string;
  /** Policies that applied, `name.namespace`. */
  policies: string[];
  jwtNote?: string;
  /** The option the path was normalized with, where it came from, and the path `paths` matched. */
  pathNormalization: NormalizedRequestPath;
}

/** The short form of `explain`: ALLOW or DENY, the reason, the rule, the policies that applied. */
export function explainText(e: Explanation): string {
  const lines = [
    `${e.decision.allowed ? "ALLOW" : "DENY"}: ${e.decision.reason}`,
    ...(e.rule !== undefined ? [`rule ${e.decision.ruleIndex}: ${e.rule}`] : []),
    ...(e.decision.audit
      ? [
        `audit: AUDIT policy ${e.decision.audit.policy.namespace}/${e.decision.audit.policy.name} rule ${e.decision.audit.ruleIndex} matched`,
      ]
      : []),
    `workload ${workloadText(e.workload)}; policies applied: ${e.policies.join(", ") || "none"}`,
    ...(e.jwtNote ? [`note: ${e.jwtNote}`] : []),
  ];
  return lines.join("\n") + "\n" + normalizationText(e.pathNormalization);
}
