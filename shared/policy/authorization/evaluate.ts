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
 * - Cost: each action's rules are indexed by the request attributes they need (rule_keys.ts,
 *   rule_index.ts), so a request evaluates only its candidate rules, in the same order; the answer
 *   is the linear scan's (`index: false`), rule_index_test.ts checks it on random policies.
 *   Decisions are shared and frozen (decision.ts).
 *
 * @module
 */
import { normalizePath } from "./path.ts";
import type { AuthorizationConnection, AuthorizationDecision, AuthorizationRequest } from "./request.ts";
import type { AuthorizationPolicyView, AuthorizationRuleView } from "./policy_view.ts";
import { allOf, anyPredicate, field, type Predicate, type Prepared } from "./predicate.ts";
import { compileOperation, compileSource } from "./field_matchers.ts";
import { conditionMatcher } from "./condition_matchers.ts";
import { httpOnlyFields, tcpRuleEffect, withoutHttpOnlyFields } from "./tcp_rules.ts";
import { ActionRules, type CompiledPolicy, type CompiledRule } from "./action_rules.ts";
import { workloadRuleKeys } from "./rule_keys.ts";
import { decision, refText, withAudit } from "./decision.ts";

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

/** Options of {@link compileAuthorization}. */
export interface CompileOptions {
  /**
   * Index the rules by the request attributes they need (exact principals, namespaces, JWT
   * principals, hosts, ports, methods, paths and path prefixes or suffixes, header values), so that a
   * request evaluates only the rules filed under its own attributes; default true. false evaluates
   * every rule of each action in order (the linear evaluator: the reference of the differential
   * test and the bench). Decisions are the same either way.
   */
  index?: boolean;
}

/** The rules of each action on one layer, and the decisions that name no rule. */
interface LayerRules {
  deny: ActionRules;
  allow: ActionRules;
  audit: ActionRules;
  /** Denied: ALLOW policies apply and none of their rules matched (its reason lists them). */
  noAllowMatched: AuthorizationDecision;
}

const NO_ALLOW_POLICY: AuthorizationDecision = decision(
  { allowed: true },
  () => "allowed: no ALLOW policy applies",
);

function layerRules(
  deny: readonly CompiledPolicy[],
  allow: readonly CompiledPolicy[],
  audit: readonly CompiledPolicy[],
  layer: Layer,
  indexed: boolean,
): LayerRules {
  const rulesOf = layer === "http" ? (c: CompiledPolicy) => c.rules : (c: CompiledPolicy) => c.tcpRules;
  const reason = (): string => {
    const dropped = layer === "tcp"
      ? allow.flatMap((c) => c.droppedOnTcp.map((i) => `${refText(c.ref)} rule ${i}`))
      : [];
    return `denied: no rule of ALLOW policies ${allow.map((c) => refText(c.ref)).join(", ")} matched${
      dropped.length > 0 ? ` (dropped on TCP for HTTP-only fields: ${dropped.join(", ")})` : ""
    }`;
  };
  return {
    deny: new ActionRules(deny, rulesOf, indexed),
    allow: new ActionRules(allow, rulesOf, indexed),
    audit: new ActionRules(audit, rulesOf, indexed),
    noAllowMatched: decision({ allowed: false }, reason),
  };
}

/**
 * Policies compiled by {@link compileAuthorization}: immutable, evaluate any number of requests
 * with {@link CompiledAuthorization.evaluate}. Decisions are frozen and shared between requests.
 */
export class CompiledAuthorization {
  readonly #http: LayerRules;
  /** Built on the first connection: a workload without TCP ports never needs it. */
  #tcp: LayerRules | undefined;
  readonly #tcpLayer: () => LayerRules;
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
    options: CompileOptions = {},
  ) {
    const indexed = options.index !== false;
    this.#http = layerRules(deny, allow, audit, "http", indexed);
    this.#tcpLayer = () => layerRules(deny, allow, audit, "tcp", indexed);
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
    const p: Prepared = {
      r: request,
      path: request.pathNormalized ? request.path : normalizePath(request.path).path,
      principal: request.sourcePrincipal ?? "",
      principalBody: request.sourcePrincipal?.startsWith("spiffe://") ? request.sourcePrincipal.slice(9) : "",
      iss: undefined,
      sub: undefined,
      sourceIp: undefined,
      remoteIp: undefined,
      destinationIp: undefined,
    };
    readJwt(p, request);
    return decide(this.#http, p);
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
    return decide(this.#tcp ??= this.#tcpLayer(), p);
  }
}

/** The JWT issuer and subject: the claims', else the request principal split at its last `/`. */
function readJwt(p: Prepared, r: AuthorizationRequest): void {
  const c = r.claims;
  if (c && typeof c.iss === "string" && typeof c.sub === "string") {
    p.iss = c.iss;
    p.sub = c.sub;
    return;
  }
  const rp = r.requestPrincipal;
  if (rp === undefined || rp === "") return;
  const idx = rp.lastIndexOf("/");
  p.iss = idx < 0 ? rp : rp.slice(0, idx);
  p.sub = idx < 0 ? "" : rp.slice(idx + 1);
}

function decide(rules: LayerRules, p: Prepared): AuthorizationDecision {
  const d = decideAction(rules, p);
  const audit = rules.audit.audit(p);
  return audit ? withAudit(d, audit) : d;
}

function decideAction(rules: LayerRules, p: Prepared): AuthorizationDecision {
  const denied = rules.deny.decide(p, "DENY");
  if (denied) return denied;
  if (rules.allow.policies === 0) return NO_ALLOW_POLICY;
  return rules.allow.decide(p, "ALLOW") ?? rules.noAllowMatched;
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
 * @param options see {@link CompileOptions}
 * @throws {RangeError} naming the policy and field for action CUSTOM ("not supported yet"), an
 *   unknown action or condition key, or a bad IP, CIDR or port (schema validation rejects all of
 *   these before they reach here)
 */
export function compileAuthorization(
  policies: readonly AuthorizationPolicyView[],
  options: CompileOptions = {},
): CompiledAuthorization {
  const deny: CompiledPolicy[] = [];
  const allow: CompiledPolicy[] = [];
  const audit: CompiledPolicy[] = [];
  const headerNames = new Set<string>();
  const indexed = options.index !== false;
  /** The rules to key once all are compiled (keys are weighed by how many rules share them). */
  const toKey: [CompiledRule, AuthorizationRuleView, string][] = [];
  for (const policy of policies) {
    const ref = { namespace: policy.namespace, name: policy.name };
    const where = `AuthorizationPolicy ${ref.namespace}/${ref.name}`;
    const action = policy.action || "ALLOW";
    const target = action === "ALLOW" ? allow : action === "DENY" ? deny : action === "AUDIT" ? audit : null;
    if (action === "CUSTOM") {
      throw new RangeError(`${where}: action CUSTOM (external authorization) is not supported yet`);
    }
    if (target === null) throw new RangeError(`${where}: unknown action "${action}"`);
    const rules = (policy.rules ?? []).map((rule, index): CompiledRule => {
      const compiled: CompiledRule = {
        index,
        test: compileRule(rule, ref.namespace, headerNames, `${where}: spec.rules[${index}]`),
        keys: undefined,
      };
      toKey.push([compiled, rule, ref.namespace]);
      return compiled;
    });
    const tcpRules: CompiledRule[] = [];
    const droppedOnTcp: number[] = [];
    (policy.rules ?? []).forEach((rule, index) => {
      if (httpOnlyFields(rule).length === 0) return tcpRules.push(rules[index]);
      if (tcpRuleEffect(action) === "dropped") return droppedOnTcp.push(index);
      const at = `${where}: spec.rules[${index}]`;
      const l4 = withoutHttpOnlyFields(rule);
      const compiled: CompiledRule = {
        index,
        test: compileRule(l4, ref.namespace, new Set(), at),
        keys: undefined,
      };
      toKey.push([compiled, l4, ref.namespace]);
      tcpRules.push(compiled);
    });
    target.push({ ref, rules, tcpRules, droppedOnTcp });
  }
  if (indexed) {
    const keys = workloadRuleKeys(toKey.map(([, rule, namespace]) => [rule, namespace] as const));
    toKey.forEach(([compiled], i) => compiled.keys = keys[i]);
  }
  for (const list of [deny, allow, audit]) list.sort(byName);
  return new CompiledAuthorization(deny, allow, audit, [...headerNames], options);
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
