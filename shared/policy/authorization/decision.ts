/**
 * The evaluator's answers, built once and shared: a rule's decision is made on its first match and
 * kept, and a reason that lists policies (a denial by ALLOW policies names all of them) is joined
 * only when `reason` is read. Decisions are frozen, since every request that a rule decides gets
 * the same object.
 *
 * @module
 */
import type { AuthorizationDecision, AuthorizationPolicyRef } from "./request.ts";

/** A decision's fields but its reason. */
type DecisionFields = Omit<AuthorizationDecision, "reason" | "audit">;

/**
 * A frozen decision whose `reason` is computed on first read (an own enumerable getter, so that
 * JSON, spreads and deep equality see it as a field), in the key order `allowed`, `policy`,
 * `action`, `ruleIndex`, `reason`, `audit`.
 */
export function decision(
  fields: DecisionFields,
  reason: () => string,
  audit?: AuthorizationDecision["audit"],
): AuthorizationDecision {
  let text: string | undefined;
  const d = { ...fields } as AuthorizationDecision;
  Object.defineProperty(d, "reason", { enumerable: true, get: () => text ??= reason() });
  if (audit) d.audit = audit;
  return Object.freeze(d);
}

/** `namespace/name`. */
export const refText = (ref: AuthorizationPolicyRef): string => `${ref.namespace}/${ref.name}`;

/** The decision of a matching DENY or ALLOW rule: `denied by DENY policy foo/x rule 0`. */
export function matchedDecision(
  action: "ALLOW" | "DENY",
  policy: AuthorizationPolicyRef,
  ruleIndex: number,
): AuthorizationDecision {
  const allowed = action === "ALLOW";
  return decision(
    { allowed, policy, action, ruleIndex },
    () => `${allowed ? "allowed" : "denied"} by ${action} policy ${refText(policy)} rule ${ruleIndex}`,
  );
}

/** The same decision with the first matching AUDIT rule (a new object; the reason stays lazy). */
export function withAudit(
  d: AuthorizationDecision,
  audit: NonNullable<AuthorizationDecision["audit"]>,
): AuthorizationDecision {
  const { allowed, policy, action, ruleIndex } = d;
  const fields: DecisionFields = policy === undefined ? { allowed } : { allowed, policy, action, ruleIndex };
  return decision(fields, () => d.reason, audit);
}
