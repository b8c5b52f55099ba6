/**
 * The authorization evaluator: AuthorizationPolicies compiled once into matchers, then each request
 * decided by them, with Istio's semantics (pilot/pkg/security/authz/model: New, the generators of
 * generator.go; the rbac filter chain CUSTOM, DENY, ALLOW) and the policies seed ("Authorization").
 *
 * - A rule matches when each of its parts matches: any `from` source (none: any source), any `to`
 *   operation (none: any operation), and every `when` condition. Within a source or operation
 *   every field set must match; a field matches when any value does, a `not` field when none does.
 * - Order: a request matching a rule of any DENY policy is denied; otherwise it is allowed when no
 *   ALLOW policy applies; otherwise it is allowed when a rule of an ALLOW policy matches, and
 *   denied if none does. An ALLOW policy without rules (`spec: {}`) matches nothing, so it denies
 *   all. AUDIT policies never change the decision; the first match is reported.
 * - Identity fields (`principals`, `namespaces`, `serviceAccounts`, `trustDomains`) need a mutual
 *   TLS peer, and `requestPrincipals` a verified JWT: without one the field does not match, and its
 *   `not` form does.
 * - A TCP connection ({@link CompiledAuthorization.evaluateConnection}) has no HTTP request: an
 *   ALLOW rule with HTTP-only fields is dropped, and a DENY or AUDIT rule's HTTP-only fields are
 *   ignored (tcp_rules.ts; Istio's "Authorization for TCP traffic").
 *
 * @module
 */
import { normalizePath } from "./path.ts";
import type {
  AuthorizationConnection,
  AuthorizationDecision,
  AuthorizationPolicyRef,
  AuthorizationRequest,
} from "./request.ts";
import type { AuthorizationPolicyView, AuthorizationRuleView } from "./policy_view.ts";
import { allOf, anyPredicate, field, type Predicate, type Prepared } from "./predicate.ts";
import { compileOperation, compileSource } from "./field_matchers.ts";
import { conditionMatcher } from "./condition_matchers.ts";
import { httpOnlyFields, tcpRuleEffect, withoutHttpOnlyFields } from "./tcp_rules.ts";

interface CompiledRule {
  index: number;
  test: Predicate;
}

interface CompiledPolicy {
  ref: AuthorizationPolicyRef;
  rules: CompiledRule[];
  /** The rules on TCP: ALLOW drops rules with HTTP-only fields, the others ignore those fields. */
  tcpRules: CompiledRule[];
  /** Indexes of the rules dropped on TCP (ALLOW only). */
  droppedOnTcp: number[];
}

type Layer = "http" | "tcp";

function compileRule(
  rule: AuthorizationRuleView,
  policyNamespace: string,
  headerNames: Set<string>,
  where: string,
): Predicate {
  const from = (rule.from ?? []).map((f, j) =>
    f.source ? compileSource(f.source, policyNamespace, `${where}.from[${j}].source`) : () => true
  );
  const to = (rule.to ?? []).map((t, j) =>
    t.operation ? compileOperation(t.operation, `${where}.to[${j}].operation`) : () => true
  );
  const when = (rule.when ?? []).map((c, j) =>
    field(
      c.values,
      c.notValues,
      conditionMatcher(c.key, policyNamespace, headerNames, `${where}.when[${j}]`),
    )
  );
  return allOf([anyPredicate(from), anyPredicate(to), ...when]);
}

/**
 * Policies compiled by {@link compileAuthorization}: immutable, evaluate any number of requests
 * with {@link CompiledAuthorization.evaluate}.
 */
export class CompiledAuthorization {
  readonly #deny: readonly CompiledPolicy[];
  readonly #allow: readonly CompiledPolicy[];
  readonly #audit: readonly CompiledPolicy[];
  /** Lower-case header names that `request.headers[...]` conditions read. */
  readonly headerNames: readonly string[];
  /** Number of policies compiled. */
  readonly size: number;

  /** Use {@link compileAuthorization}. */
  constructor(
    deny: readonly CompiledPolicy[],
    allow: readonly CompiledPolicy[],
    audit: readonly CompiledPolicy[],
    headerNames: readonly string[],
  ) {
    this.#deny = deny;
    this.#allow = allow;
    this.#audit = audit;
    this.headerNames = headerNames;
    this.size = deny.length + allow.length + audit.length;
  }

  /**
   * Decides one request (DENY, then allow when no ALLOW policy applies, then ALLOW; AUDIT reported).
   *
   * @param request the request's attributes
   * @returns the decision, the deciding policy and rule index, and a one-line reason
   * @throws {PathError} when the path contains `%00` (answer 400)
   */
  evaluate(request: AuthorizationRequest): AuthorizationDecision {
    const [iss, sub] = issAndSub(request);
    const p: Prepared = {
      r: request,
      path: request.pathNormalized ? request.path : normalizePath(request.path).path,
      principal: request.sourcePrincipal ?? "",
      principalBody: request.sourcePrincipal?.startsWith("spiffe://") ? request.sourcePrincipal.slice(9) : "",
      iss,
      sub,
      sourceIp: undefined,
      remoteIp: undefined,
      destinationIp: undefined,
    };
    return this.#decide(p, "http");
  }

  /**
   * Decides one TCP connection with Istio's L4 semantics (tcp_rules.ts): an ALLOW rule with
   * HTTP-only fields matches nothing, a DENY (or AUDIT) rule's HTTP-only fields are ignored. Same
   * order as {@link evaluate}.
   *
   * @param connection the connection's peer identity, addresses, destination port and SNI
   * @returns the decision; a denial by ALLOW policies names the rules dropped on TCP in `reason`
   */
  evaluateConnection(connection: AuthorizationConnection): AuthorizationDecision {
    const p: Prepared = {
      r: { ...connection, method: "", path: "" },
      path: "",
      principal: connection.sourcePrincipal ?? "",
      principalBody: connection.sourcePrincipal?.startsWith("spiffe://")
        ? connection.sourcePrincipal.slice(9)
        : "",
      iss: undefined,
      sub: undefined,
      sourceIp: undefined,
      remoteIp: undefined,
      destinationIp: undefined,
    };
    return this.#decide(p, "tcp");
  }

  #decide(p: Prepared, layer: Layer): AuthorizationDecision {
    const d = this.#decideAction(p, layer);
    if (this.#audit.length > 0) {
      const a = firstMatch(this.#audit, p, layer);
      if (a) d.audit = { policy: a.policy.ref, ruleIndex: a.rule.index };
    }
    return d;
  }

  #decideAction(p: Prepared, layer: Layer): AuthorizationDecision {
    const denied = firstMatch(this.#deny, p, layer);
    if (denied) return matched("DENY", denied);
    if (this.#allow.length === 0) return { allowed: true, reason: "allowed: no ALLOW policy applies" };
    const allowed = firstMatch(this.#allow, p, layer);
    if (allowed) return matched("ALLOW", allowed);
    const dropped = layer === "tcp"
      ? this.#allow.flatMap((c) => c.droppedOnTcp.map((i) => `${refText(c.ref)} rule ${i}`))
      : [];
    return {
      allowed: false,
      reason: `denied: no rule of ALLOW policies ${
        this.#allow.map((c) => refText(c.ref)).join(", ")
      } matched${dropped.length > 0 ? ` (dropped on TCP for HTTP-only fields: ${dropped.join(", ")})` : ""}`,
    };
  }
}

function byName(a: CompiledPolicy, b: CompiledPolicy): number {
  const ka = `${a.ref.namespace}/${a.ref.name}`;
  const kb = `${b.ref.namespace}/${b.ref.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * Compiles policies once (per config change), so that each request costs only the matching.
 * Policies are kept in namespace/name order, so the deciding policy is the same on every proxy.
 *
 * @param policies the policies that apply to one workload (see {@link applicableAuthorizationPolicies})
 * @throws {RangeError} naming the policy and field for action CUSTOM ("not supported yet"), an
 *   unknown action or condition key, or a bad IP, CIDR or port (schema validation rejects all of
 *   these before they reach here)
 */
export function compileAuthorization(policies: readonly AuthorizationPolicyView[]): CompiledAuthorization {
  const deny: CompiledPolicy[] = [];
  const allow: CompiledPolicy[] = [];
  const audit: CompiledPolicy[] = [];
  const headerNames = new Set<string>();
  for (const policy of policies) {
    const ref = { namespace: policy.namespace, name: policy.name };
    const where = `AuthorizationPolicy ${ref.namespace}/${ref.name}`;
    const action = policy.action || "ALLOW";
    const target = action === "ALLOW" ? allow : action === "DENY" ? deny : action === "AUDIT" ? audit : null;
    if (action === "CUSTOM") {
      throw new RangeError(`${where}: action CUSTOM (external authorization) is not supported yet`);
    }
    if (target === null) throw new RangeError(`${where}: unknown action "${action}"`);
    const rules = (policy.rules ?? []).map((rule, index) => ({
      index,
      test: compileRule(rule, ref.namespace, headerNames, `${where}: spec.rules[${index}]`),
    }));
    const tcpRules: CompiledRule[] = [];
    const droppedOnTcp: number[] = [];
    (policy.rules ?? []).forEach((rule, index) => {
      if (httpOnlyFields(rule).length === 0) return tcpRules.push(rules[index]);
      if (tcpRuleEffect(action) === "dropped") return droppedOnTcp.push(index);
      const at = `${where}: spec.rules[${index}]`;
      tcpRules.push({ index, test: compileRule(withoutHttpOnlyFields(rule), ref.namespace, new Set(), at) });
    });
    target.push({ ref, rules, tcpRules, droppedOnTcp });
  }
  for (const list of [deny, allow, audit]) list.sort(byName);
  return new CompiledAuthorization(deny, allow, audit, [...headerNames]);
}

function firstMatch(
  policies: readonly CompiledPolicy[],
  p: Prepared,
  layer: Layer,
): { policy: CompiledPolicy; rule: CompiledRule } | undefined {
  for (let i = 0; i < policies.length; i++) {
    const rules = layer === "http" ? policies[i].rules : policies[i].tcpRules;
    for (let j = 0; j < rules.length; j++) {
      if (rules[j].test(p)) return { policy: policies[i], rule: rules[j] };
    }
  }
  return undefined;
}

function issAndSub(r: AuthorizationRequest): [string | undefined, string | undefined] {
  const c = r.claims;
  if (c && typeof c.iss === "string" && typeof c.sub === "string") return [c.iss, c.sub];
  const rp = r.requestPrincipal;
  if (rp === undefined || rp === "") return [undefined, undefined];
  const idx = rp.lastIndexOf("/");
  return idx < 0 ? [rp, ""] : [rp.slice(0, idx), rp.slice(idx + 1)];
}

const refText = (ref: AuthorizationPolicyRef) => `${ref.namespace}/${ref.name}`;

function matched(
  action: "ALLOW" | "DENY",
  m: { policy: CompiledPolicy; rule: CompiledRule },
): AuthorizationDecision {
  return {
    allowed: action === "ALLOW",
    policy: m.policy.ref,
    action,
    ruleIndex: m.rule.index,
    reason: `${action === "ALLOW" ? "allowed" : "denied"} by ${action} policy ${
      refText(m.policy.ref)
    } rule ${m.rule.index}`,
  };
}

/**
 * Compiles and evaluates in one call, for one-off questions (meshctl); the proxy compiles once per
 * config and calls {@link CompiledAuthorization.evaluate}.
 */
export function authorize(
  policies: readonly AuthorizationPolicyView[],
  request: AuthorizationRequest,
): AuthorizationDecision {
  return compileAuthorization(policies).evaluate(request);
}

/** {@link CompiledAuthorization.evaluateConnection} in one call, for one-off questions (meshctl). */
export function authorizeConnection(
  policies: readonly AuthorizationPolicyView[],
  connection: AuthorizationConnection,
): AuthorizationDecision {
  return compileAuthorization(policies).evaluateConnection(connection);
}
