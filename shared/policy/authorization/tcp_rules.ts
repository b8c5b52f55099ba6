/**
 * AuthorizationPolicy rules on TCP: which fields are HTTP-only, and what becomes of a rule that has
 * them where there is no HTTP request (Istio's authorization-policy reference and "Authorization for
 * TCP traffic" task; pilot/pkg/security/authz/model: a generator's `forTCP` error, which an ALLOW
 * policy turns into a skipped rule and the others ignore; builder.go builds AUDIT with RBAC_LOG and
 * CUSTOM with RBAC_DENY, so both ignore too, and skips a CUSTOM policy whose provider is HTTP-only on TCP).
 *
 * - ALLOW: a rule with any HTTP-only field is dropped (matches nothing), so it allows less.
 * - DENY, AUDIT, CUSTOM: the HTTP-only fields are ignored, "as if those fields are not present",
 *   so the rule matches more: a DENY rule of only `methods: [GET]` denies every connection.
 *
 * L4 fields: `principals`, `namespaces`, `serviceAccounts`, `trustDomains`, `ipBlocks`,
 * `remoteIpBlocks`, `ports` (and their `not` forms) and the conditions `source.ip`, `remote.ip`,
 * `source.namespace`, `source.principal`, `source.serviceAccount`, `source.trustDomain`,
 * `destination.ip`, `destination.port`, `connection.sni`.
 *
 * @module
 */
import type {
  AuthorizationOperationView,
  AuthorizationPolicyView,
  AuthorizationRuleView,
  AuthorizationSourceView,
} from "./policy_view.ts";
import type { AuthorizationPolicyRef } from "./request.ts";

/** Source fields that need an HTTP request (a JWT). */
const HTTP_SOURCE_FIELDS = ["requestPrincipals", "notRequestPrincipals"] as const;
/** Operation fields that need an HTTP request. */
const HTTP_OPERATION_FIELDS = ["hosts", "notHosts", "methods", "notMethods", "paths", "notPaths"] as const;

/** Whether a `when` key needs an HTTP request (`request.*`: headers, JWT principal, claims, ...). */
export function isHttpOnlyConditionKey(key: string): boolean {
  return key.startsWith("request.");
}

const isSet = (v: readonly string[] | null | undefined): boolean => (v ?? []).length > 0;

/**
 * The HTTP-only fields a rule sets, as field paths of the rule.
 *
 * @returns e.g. `["to[0].operation.methods", "when[1] request.headers[x-token]"]`; empty for an L4 rule
 */
export function httpOnlyFields(rule: AuthorizationRuleView): string[] {
  const out: string[] = [];
  (rule.from ?? []).forEach((f, i) => {
    for (const k of HTTP_SOURCE_FIELDS) {
      if (f.source && isSet(f.source[k])) out.push(`from[${i}].source.${k}`);
    }
  });
  (rule.to ?? []).forEach((t, i) => {
    for (const k of HTTP_OPERATION_FIELDS) {
      if (t.operation && isSet(t.operation[k])) out.push(`to[${i}].operation.${k}`);
    }
  });
  (rule.when ?? []).forEach((c, i) => {
    if (isHttpOnlyConditionKey(c.key)) out.push(`when[${i}] ${c.key}`);
  });
  return out;
}

function omit<T extends object>(o: T, keys: readonly string[]): T {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k))) as T;
}

/** The rule with its HTTP-only fields removed: what a DENY rule matches on TCP. */
export function withoutHttpOnlyFields(rule: AuthorizationRuleView): AuthorizationRuleView {
  return {
    from: rule.from?.map((f) => ({
      source: f.source ? omit<AuthorizationSourceView>(f.source, HTTP_SOURCE_FIELDS) : f.source,
    })),
    to: rule.to?.map((t) => ({
      operation: t.operation
        ? omit<AuthorizationOperationView>(t.operation, HTTP_OPERATION_FIELDS)
        : t.operation,
    })),
    when: rule.when?.filter((c) => !isHttpOnlyConditionKey(c.key)),
  };
}

/** What a rule with HTTP-only fields becomes on TCP, by the policy's action. */
export type TcpRuleEffect = "dropped" | "ignored";

/** ALLOW (the default) drops such a rule; DENY, AUDIT and CUSTOM ignore the HTTP-only fields. */
export function tcpRuleEffect(action: string | undefined): TcpRuleEffect {
  return (action || "ALLOW") === "ALLOW" ? "dropped" : "ignored";
}

/** A rule that behaves otherwise on TCP than on HTTP. */
export interface TcpRuleWarning {
  /** The policy. */
  policy: AuthorizationPolicyRef;
  /** Its action after defaulting. */
  action: string;
  /** Index (from 0) of the rule in `spec.rules`. */
  ruleIndex: number;
  /** The rule's HTTP-only fields (see {@link httpOnlyFields}). */
  fields: string[];
  /** `dropped` (ALLOW) or `ignored` (DENY, AUDIT, CUSTOM). */
  effect: TcpRuleEffect;
  /** One sentence for logs and analyzers; `on` names the TCP ports it concerns. */
  message: string;
}

/**
 * The rules of policies that behave otherwise on TCP ports: the warnings meshd logs and
 * `meshctl analyze` reports (Istio users trip on this: istio#25832, istio#44348).
 *
 * @param policies policies that select a workload with TCP (or auto-detected) ports
 * @param on the ports, e.g. `workload foo/tcp-echo TCP ports 9000, 9001`, used in the message
 */
export function tcpRuleWarnings(policies: readonly AuthorizationPolicyView[], on: string): TcpRuleWarning[] {
  const out: TcpRuleWarning[] = [];
  for (const p of policies) {
    const action = p.action || "ALLOW";
    (p.rules ?? []).forEach((rule, ruleIndex) => {
      const fields = httpOnlyFields(rule);
      if (fields.length === 0) return;
      const effect = tcpRuleEffect(action);
      const what = effect === "dropped"
        ? "the rule is dropped there (matches nothing, so it allows no connection)"
        : "those fields are ignored there (the rule matches more connections)";
      out.push({
        policy: { namespace: p.namespace, name: p.name },
        action,
        ruleIndex,
        fields,
        effect,
        message:
          `AuthorizationPolicy ${p.namespace}/${p.name} (${action}) spec.rules[${ruleIndex}] has HTTP-only ` +
          `fields (${fields.join(", ")}) and applies to ${on}: ${what}`,
      });
    });
  }
  return out;
}
