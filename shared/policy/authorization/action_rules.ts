/**
 * The rules of one action (DENY, ALLOW or AUDIT) on one layer (HTTP, or TCP with tcp_rules.ts'
 * semantics), in evaluation order (policies in namespace/name order, then `spec.rules` order), with
 * their index (rule_index.ts) and the decision each rule gives when it is the first to match.
 *
 * @module
 */
import { matchedDecision } from "./decision.ts";
import type { Predicate, Prepared } from "./predicate.ts";
import type { AuthorizationDecision, AuthorizationPolicyRef } from "./request.ts";
import { type IndexedRule, RuleIndex } from "./rule_index.ts";
import type { RuleKey } from "./rule_keys.ts";

/** One compiled rule: its position in the policy's `spec.rules`, matcher and keys. */
export interface CompiledRule {
  /** Index (from 0) in the policy's `spec.rules`. */
  index: number;
  /** The rule's matcher. */
  test: Predicate;
  /** Its keys (rule_keys.ts), or undefined. */
  keys: readonly RuleKey[] | undefined;
}

/** One policy, compiled for both layers. */
export interface CompiledPolicy {
  /** The policy. */
  ref: AuthorizationPolicyRef;
  /** The rules on HTTP. */
  rules: CompiledRule[];
  /** The rules on TCP: ALLOW drops rules with HTTP-only fields, the others ignore those fields. */
  tcpRules: CompiledRule[];
  /** Indexes of the rules dropped on TCP (ALLOW only). */
  droppedOnTcp: number[];
}

/** A matching AUDIT rule, as {@link AuthorizationDecision.audit} reports it. */
export type AuditMatch = NonNullable<AuthorizationDecision["audit"]>;

/** The rules of one action on one layer. */
export class ActionRules {
  /** Number of policies (of which some may have no rule). */
  readonly policies: number;
  readonly #index: RuleIndex;
  readonly #refs: AuthorizationPolicyRef[] = [];
  readonly #ruleIndexes: number[] = [];
  readonly #decisions: (AuthorizationDecision | undefined)[] = [];
  readonly #audits: (AuditMatch | undefined)[] = [];

  /**
   * @param policies the action's policies in namespace/name order
   * @param rulesOf the rules of a policy on this layer
   * @param indexed false: evaluate every rule in order (the linear scan)
   */
  constructor(
    policies: readonly CompiledPolicy[],
    rulesOf: (p: CompiledPolicy) => readonly CompiledRule[],
    indexed: boolean,
  ) {
    this.policies = policies.length;
    const rules: IndexedRule[] = [];
    for (const policy of policies) {
      for (const rule of rulesOf(policy)) {
        rules.push(rule);
        this.#refs.push(policy.ref);
        this.#ruleIndexes.push(rule.index);
      }
    }
    this.#index = new RuleIndex(rules, indexed);
  }

  /** The decision of the first matching rule (DENY or ALLOW), or undefined when none matches. */
  decide(p: Prepared, action: "ALLOW" | "DENY"): AuthorizationDecision | undefined {
    const i = this.#index.firstMatch(p);
    if (i < 0) return undefined;
    return this.#decisions[i] ??= matchedDecision(action, this.#refs[i], this.#ruleIndexes[i]);
  }

  /** The first matching rule (AUDIT), or undefined. */
  audit(p: Prepared): AuditMatch | undefined {
    if (this.#index.size === 0) return undefined;
    const i = this.#index.firstMatch(p);
    if (i < 0) return undefined;
    return this.#audits[i] ??= Object.freeze({ policy: this.#refs[i], ruleIndex: this.#ruleIndexes[i] });
  }
}
