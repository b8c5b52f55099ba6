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
 *
 * @module
 */
import { type CidrBlock, cidrContains, parseCidr, parseIp } from "./ip_block.ts";
import { isPathTemplate, normalizePath, pathTemplateRegExp } from "./path.ts";
import type { AuthorizationDecision, AuthorizationPolicyRef, AuthorizationRequest } from "./request.ts";
import { escapeRegExp, type TextMatcher, wildcardMatcher } from "./string_match.ts";

/** A list field as policies carry it: absent, null or empty all mean "not set". */
export type AuthorizationValueList = readonly string[] | null | undefined;

/** A `from[].source` (the AuthorizationPolicy's Source; decoded mesh.v1.Source fits too). */
export interface AuthorizationSourceView {
  /** Peer identities `<td>/ns/<ns>/sa/<sa>` (SPIFFE ID without `spiffe://`); `*` at either end. */
  principals?: AuthorizationValueList;
  /** Peer identities that must not match. */
  notPrincipals?: AuthorizationValueList;
  /** JWT principals `<iss>/<sub>`; `*` at either end, or for iss or sub. */
  requestPrincipals?: AuthorizationValueList;
  /** JWT principals that must not match; `["*"]` matches requests without one. */
  notRequestPrincipals?: AuthorizationValueList;
  /** Peer namespaces (from the peer identity); `*` wildcards. */
  namespaces?: AuthorizationValueList;
  /** Peer namespaces that must not match. */
  notNamespaces?: AuthorizationValueList;
  /** Peer service accounts `<ns>/<sa>`, or `<sa>` in the policy's namespace. */
  serviceAccounts?: AuthorizationValueList;
  /** Peer service accounts that must not match. */
  notServiceAccounts?: AuthorizationValueList;
  /** Peer address IPs or CIDR blocks. */
  ipBlocks?: AuthorizationValueList;
  /** Peer addresses that must not match. */
  notIpBlocks?: AuthorizationValueList;
  /** Original client IPs or CIDR blocks. */
  remoteIpBlocks?: AuthorizationValueList;
  /** Original client addresses that must not match. */
  notRemoteIpBlocks?: AuthorizationValueList;
  /** Trust domains of the peer identity; `*` wildcards. */
  trustDomains?: AuthorizationValueList;
  /** Trust domains that must not match. */
  notTrustDomains?: AuthorizationValueList;
}

/** A `to[].operation`. */
export interface AuthorizationOperationView {
  /** Host header values, case-insensitive; `*` at either end. */
  hosts?: AuthorizationValueList;
  /** Host header values that must not match. */
  notHosts?: AuthorizationValueList;
  /** Destination ports as decimal strings. */
  ports?: AuthorizationValueList;
  /** Destination ports that must not match. */
  notPorts?: AuthorizationValueList;
  /** HTTP methods; `*` at either end. */
  methods?: AuthorizationValueList;
  /** HTTP methods that must not match. */
  notMethods?: AuthorizationValueList;
  /** Normalized paths without query; `*` at either end, or `{*}`/`{**}` templates. */
  paths?: AuthorizationValueList;
  /** Paths that must not match. */
  notPaths?: AuthorizationValueList;
}

/** A rule of an AuthorizationPolicy. */
export interface AuthorizationRuleView {
  /** Sources, any of which must match; none: any source. */
  from?: readonly { source?: AuthorizationSourceView | null }[] | null;
  /** Operations, any of which must match; none: any operation. */
  to?: readonly { operation?: AuthorizationOperationView | null }[] | null;
  /** Conditions (Istio's documented keys), all of which must match. */
  when?:
    | readonly { key: string; values?: AuthorizationValueList; notValues?: AuthorizationValueList }[]
    | null;
}

/**
 * An AuthorizationPolicy as the evaluator reads it: its namespace and name, and its spec's action
 * and rules. A decoded `mesh.v1.Authorization` is one; for a YAML resource use
 * {@link authorizationPolicyView}.
 */
export interface AuthorizationPolicyView {
  /** The policy's namespace. */
  namespace: string;
  /** The policy's name. */
  name: string;
  /** ALLOW (default), DENY or AUDIT; CUSTOM is not supported yet. */
  action?: string;
  /** Absent, null or empty: the policy matches nothing. */
  rules?: readonly AuthorizationRuleView[] | null;
}

/** The request as matchers read it, computed once per evaluation. */
interface Prepared {
  r: AuthorizationRequest;
  path: string;
  /** The peer principal, `spiffe://` included, or "" for plain text. */
  principal: string;
  /** The principal without `spiffe://` (Istio's principal form), or "" for plain text. */
  principalBody: string;
  iss: string | undefined;
  sub: string | undefined;
  sourceIp: Uint8Array | null | undefined;
  remoteIp: Uint8Array | null | undefined;
  destinationIp: Uint8Array | null | undefined;
}

type Predicate = (p: Prepared) => boolean;

interface CompiledRule {
  index: number;
  test: Predicate;
}

interface CompiledPolicy {
  ref: AuthorizationPolicyRef;
  rules: CompiledRule[];
}

function listOf(l: AuthorizationValueList): readonly string[] {
  return l ?? [];
}

/** True when any predicate is; undefined (no constraint) for an empty list. */
function anyPredicate(ps: Predicate[]): Predicate | undefined {
  if (ps.length <= 1) return ps[0];
  return (p) => {
    for (let i = 0; i < ps.length; i++) if (ps[i](p)) return true;
    return false;
  };
}

function anyOf(values: readonly string[], make: (v: string) => Predicate): Predicate {
  return anyPredicate(values.map(make))!;
}

/** The field's predicate: `values` any-match and `notValues` none-match, or undefined when unset. */
function field(
  values: AuthorizationValueList,
  notValues: AuthorizationValueList,
  make: (v: string) => Predicate,
): Predicate | undefined {
  const yes = listOf(values).length > 0 ? anyOf(listOf(values), make) : undefined;
  const no = listOf(notValues).length > 0 ? anyOf(listOf(notValues), make) : undefined;
  if (yes && no) return (p) => yes(p) && !no(p);
  if (yes) return yes;
  if (no) return (p) => !no(p);
  return undefined;
}

function allOf(ps: (Predicate | undefined)[]): Predicate {
  const list = ps.filter((p): p is Predicate => p !== undefined);
  if (list.length === 0) return () => true;
  if (list.length === 1) return list[0];
  return (p) => {
    for (let i = 0; i < list.length; i++) if (!list[i](p)) return false;
    return true;
  };
}

function regexOnPrincipal(source: string): Predicate {
  const re = new RegExp(`^${source}$`);
  return (p) => p.principal !== "" && re.test(p.principal);
}

/** `principals`, `source.principal`: Istio's StringMatcherWithPrefix(v, "spiffe://"). */
function principalMatcher(v: string): Predicate {
  const m = wildcardMatcher(v);
  return (p) => p.principalBody !== "" && m(p.principalBody);
}

/** `namespaces`, `source.namespace`: `.*\/ns/<ns>/.*` with `*` as `.*`. */
function namespaceMatcher(v: string): Predicate {
  if (!v.includes("*")) {
    const needle = `/ns/${v}/`;
    return (p) => p.principal.includes(needle);
  }
  // Unanchored: the same as Istio's `.*\/ns/<ns>/.*` without the costly leading `.*`.
  const re = new RegExp(`/ns/${v.split("*").map(escapeRegExp).join(".*")}/`);
  return (p) => p.principal !== "" && re.test(p.principal);
}

/** `serviceAccounts`, `source.serviceAccount`: `sa` (the policy's namespace) or `ns/sa`. */
function serviceAccountMatcher(policyNamespace: string): (v: string) => Predicate {
  return (v) => {
    const slash = v.indexOf("/");
    const ns = slash < 0 ? policyNamespace : v.slice(0, slash);
    const sa = slash < 0 ? v : v.slice(slash + 1);
    return regexOnPrincipal(`spiffe://.+/ns/${escapeRegExp(ns)}/(.+/|)sa/${escapeRegExp(sa)}(/.+)?`);
  };
}

/** `trustDomains`, `source.trustDomain`. */
function trustDomainMatcher(v: string): Predicate {
  if (v === "*") return (p) => p.principal.startsWith("spiffe://");
  if (!v.includes("*")) {
    const prefix = `spiffe://${v}/`;
    return (p) => p.principal.startsWith(prefix);
  }
  const [a, b] = v.split("*", 2);
  return regexOnPrincipal(`spiffe://${escapeRegExp(a)}[^/]*${escapeRegExp(b)}/.*`);
}

const ANY_NON_EMPTY: TextMatcher = (t) => t.length > 0;

/** `requestPrincipals`, `request.auth.principal`: iss and sub matched apart, split at the last `/`. */
function requestPrincipalMatcher(v: string): Predicate {
  const idx = v.lastIndexOf("/");
  const found = idx >= 0;
  const iss = found ? v.slice(0, idx) : v;
  const sub = found ? v.slice(idx + 1) : "";
  let mi: TextMatcher;
  let ms: TextMatcher;
  if (v === "*") {
    mi = ANY_NON_EMPTY;
    ms = ANY_NON_EMPTY;
  } else if (v.startsWith("*")) {
    if (found) {
      mi = iss === "*" ? ANY_NON_EMPTY : wildcardMatcher(iss);
      ms = (t) => t === sub;
    } else {
      mi = ANY_NON_EMPTY;
      ms = wildcardMatcher(v);
    }
  } else if (v.endsWith("*")) {
    if (found) {
      mi = (t) => t === iss;
      ms = sub === "*" ? ANY_NON_EMPTY : wildcardMatcher(sub);
    } else {
      mi = wildcardMatcher(v);
      ms = ANY_NON_EMPTY;
    }
  } else {
    mi = (t) => t === iss;
    ms = (t) => t === sub;
  }
  return (p) => p.iss !== undefined && p.sub !== undefined && mi(p.iss) && ms(p.sub);
}

function ipMatcher(
  which: "sourceIp" | "remoteIp" | "destinationIp",
  where: string,
): (v: string) => Predicate {
  return (v) => {
    const block: CidrBlock | undefined = parseCidr(v);
    if (!block) throw new RangeError(`${where}: "${v}" is not an IP address or CIDR block`);
    return (p) => {
      const ip = ipOf(p, which);
      return ip !== null && cidrContains(block, ip);
    };
  };
}

function ipOf(p: Prepared, which: "sourceIp" | "remoteIp" | "destinationIp"): Uint8Array | null {
  let ip = p[which];
  if (ip === undefined) {
    const text = which === "remoteIp" ? p.r.remoteIp ?? p.r.sourceIp : p.r[which];
    ip = text === undefined ? null : parseIp(text) ?? null;
    p[which] = ip;
  }
  return ip;
}

function portMatcher(where: string): (v: string) => Predicate {
  return (v) => {
    if (!/^[0-9]+$/.test(v) || Number(v) > 65535) throw new RangeError(`${where}: "${v}" is not a port`);
    const n = Number(v);
    return (p) => p.r.port === n;
  };
}

/** A claim by path (`[a][b]` nests); undefined when absent. */
function claimAt(claims: Readonly<Record<string, unknown>> | undefined, path: readonly string[]): unknown {
  let v: unknown = claims;
  for (const k of path) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** A string claim matches a value; a list claim when any of its strings does. */
function claimMatcher(path: readonly string[]): (v: string) => Predicate {
  return (v) => {
    const m = wildcardMatcher(v);
    return (p) => {
      const c = claimAt(p.r.claims, path);
      if (typeof c === "string") return m(c);
      if (Array.isArray(c)) {
        for (const e of c) if (typeof e === "string" && m(e)) return true;
      }
      return false;
    };
  };
}

/** A header value (Envoy's HeaderMatcher: `*` is presence, else exact, prefix or suffix). */
function headerMatcher(name: string): (v: string) => Predicate {
  return (v) => {
    const m = wildcardMatcher(v, { star: "any" });
    return (p) => {
      const h = p.r.headers?.[name];
      return h !== undefined && m(h);
    };
  };
}

function bracketNames(rest: string, key: string): string[] {
  const names = [...rest.matchAll(/\[([^\[\]]+)\]/g)].map((m) => m[1]);
  if (names.length === 0 || names.map((n) => `[${n}]`).join("") !== rest) {
    throw new RangeError(`condition key "${key}": expected [name] after the attribute`);
  }
  return names;
}

function conditionMatcher(
  key: string,
  policyNamespace: string,
  headerNames: Set<string>,
  where: string,
): (v: string) => Predicate {
  if (key.startsWith("request.headers[")) {
    const [name] = bracketNames(key.slice("request.headers".length), key);
    headerNames.add(name.toLowerCase());
    return headerMatcher(name.toLowerCase());
  }
  if (key.startsWith("request.auth.claims[")) {
    return claimMatcher(bracketNames(key.slice("request.auth.claims".length), key));
  }
  switch (key) {
    case "source.ip":
      return ipMatcher("sourceIp", where);
    case "remote.ip":
      return ipMatcher("remoteIp", where);
    case "destination.ip":
      return ipMatcher("destinationIp", where);
    case "destination.port":
      return portMatcher(where);
    case "source.namespace":
      return namespaceMatcher;
    case "source.principal":
      return principalMatcher;
    case "source.serviceAccount":
      return serviceAccountMatcher(policyNamespace);
    case "source.trustDomain":
      return trustDomainMatcher;
    case "request.auth.principal":
      return requestPrincipalMatcher;
    case "request.auth.audiences":
      return claimMatcher(["aud"]);
    case "request.auth.presenter":
      return claimMatcher(["azp"]);
    case "connection.sni":
      return (v) => {
        const m = wildcardMatcher(v);
        return (p) => p.r.sni !== undefined && m(p.r.sni);
      };
  }
  throw new RangeError(`${where}: condition key "${key}" is not supported`);
}

function pathMatcher(v: string): Predicate {
  if (isPathTemplate(v)) {
    const re = pathTemplateRegExp(v);
    return (p) => re.test(p.path);
  }
  const m = wildcardMatcher(v);
  return (p) => m(p.path);
}

function compileSource(s: AuthorizationSourceView, policyNamespace: string, where: string): Predicate {
  return allOf([
    field(s.principals, s.notPrincipals, principalMatcher),
    field(s.requestPrincipals, s.notRequestPrincipals, requestPrincipalMatcher),
    field(s.namespaces, s.notNamespaces, namespaceMatcher),
    field(s.serviceAccounts, s.notServiceAccounts, serviceAccountMatcher(policyNamespace)),
    field(s.ipBlocks, s.notIpBlocks, ipMatcher("sourceIp", `${where}.ipBlocks`)),
    field(s.remoteIpBlocks, s.notRemoteIpBlocks, ipMatcher("remoteIp", `${where}.remoteIpBlocks`)),
    field(s.trustDomains, s.notTrustDomains, trustDomainMatcher),
  ]);
}

function compileOperation(o: AuthorizationOperationView, where: string): Predicate {
  const host = (v: string): Predicate => {
    const m = wildcardMatcher(v, { ignoreCase: true, star: "any" });
    return (p) => p.r.host !== undefined && m(p.r.host);
  };
  const method = (v: string): Predicate => {
    const m = wildcardMatcher(v, { star: "any" });
    return (p) => m(p.r.method);
  };
  return allOf([
    field(o.hosts, o.notHosts, host),
    field(o.ports, o.notPorts, portMatcher(`${where}.ports`)),
    field(o.methods, o.notMethods, method),
    field(o.paths, o.notPaths, pathMatcher),
  ]);
}

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
    const d = this.#decide(p);
    if (this.#audit.length > 0) {
      const a = firstMatch(this.#audit, p);
      if (a) d.audit = { policy: a.policy.ref, ruleIndex: a.rule.index };
    }
    return d;
  }

  #decide(p: Prepared): AuthorizationDecision {
    const denied = firstMatch(this.#deny, p);
    if (denied) return matched("DENY", denied);
    if (this.#allow.length === 0) return { allowed: true, reason: "allowed: no ALLOW policy applies" };
    const allowed = firstMatch(this.#allow, p);
    if (allowed) return matched("ALLOW", allowed);
    return {
      allowed: false,
      reason: `denied: no rule of ALLOW policies ${
        this.#allow.map((c) => refText(c.ref)).join(", ")
      } matched`,
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
    target.push({ ref, rules });
  }
  for (const list of [deny, allow, audit]) list.sort(byName);
  return new CompiledAuthorization(deny, allow, audit, [...headerNames]);
}

function firstMatch(
  policies: readonly CompiledPolicy[],
  p: Prepared,
): { policy: CompiledPolicy; rule: CompiledRule } | undefined {
  for (let i = 0; i < policies.length; i++) {
    const rules = policies[i].rules;
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
