/**
 * Matcher bugs planted in the AuthorizationPolicy evaluator: each field, operation and condition
 * key made to always match, never match, or read the wrong attribute, and its validation removed.
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

const TESTS = [
  "shared/policy/authorization/evaluate_test.ts",
  "shared/policy/authorization/field_matchers_test.ts",
  "shared/policy/authorization/condition_matchers_test.ts",
];
const DIR = "shared/policy/authorization";
const m = mutant("authorization", `${DIR}/evaluate.ts`, TESTS);
const predicates = mutant("authorization", `${DIR}/predicate.ts`, TESTS);
const fields = mutant("authorization", `${DIR}/field_matchers.ts`, TESTS);
const conditions = mutant("authorization", `${DIR}/condition_matchers.ts`, TESTS);
const actionRules = mutant("authorization", `${DIR}/action_rules.ts`, TESTS);
const ALWAYS = "return () => () => true;";

/** The evaluator's mutants. */
export const AUTHORIZATION_MUTANTS: readonly Mutant[] = [
  // The eight of the first mutation check.
  conditions(
    "source.ip reads the destination IP",
    'case "source.ip":\n      return ipMatcher("sourceIp", where);',
    'case "source.ip":\n      return ipMatcher("destinationIp", where);',
  ),
  conditions("remote.ip always matches", 'return ipMatcher("remoteIp", where);', ALWAYS),
  conditions(
    "source.principal always matches",
    'case "source.principal":\n      return principalMatcher;',
    `case "source.principal":\n      ${ALWAYS}`,
  ),
  conditions(
    "source.serviceAccount always matches",
    'case "source.serviceAccount":\n      return serviceAccountMatcher(policyNamespace);',
    `case "source.serviceAccount":\n      ${ALWAYS}`,
  ),
  conditions("request.auth.presenter always matches", 'return claimMatcher(["azp"]);', ALWAYS),
  fields(
    "port validation removed",
    'if (!/^[0-9]+$/.test(v) || Number(v) > 65535) throw new RangeError(`${where}: "${v}" is not a port`);',
    "",
  ),
  fields(
    "IP validation removed (a bad block matches nothing)",
    'if (!block) throw new RangeError(`${where}: "${v}" is not an IP address or CIDR block`);',
    "if (!block) return () => false;",
  ),
  conditions(
    "unknown condition keys are ignored",
    'throw new RangeError(`${where}: condition key "${key}" is not supported`);',
    "return () => () => true;",
  ),
  // Source fields.
  fields(
    "principals ignore the value",
    'return (p) => p.principalBody !== "" && m(p.principalBody);',
    'return (p) => p.principalBody !== "";',
  ),
  fields(
    "principals read the whole principal (spiffe:// included)",
    'return (p) => p.principalBody !== "" && m(p.principalBody);',
    'return (p) => p.principalBody !== "" && m(p.principal);',
  ),
  fields("namespaces match anywhere in the principal", "const needle = `/ns/${v}/`;", "const needle = v;"),
  fields(
    "namespaces with * ignore the value",
    'const re = new RegExp(`/ns/${v.split("*").map(escapeRegExp).join(".*")}/`);',
    'const re = new RegExp("/ns/.*/");',
  ),
  fields(
    "serviceAccounts ignore the namespace",
    "`spiffe://.+/ns/${escapeRegExp(ns)}/(.+/|)sa/",
    "`spiffe://.+/ns/.+/(.+/|)sa/",
  ),
  fields(
    "serviceAccounts without ns read any namespace",
    "const ns = slash < 0 ? policyNamespace :",
    'const ns = slash < 0 ? "" :',
  ),
  fields(
    "trustDomains match a longer domain",
    "const prefix = `spiffe://${v}/`;",
    "const prefix = `spiffe://${v}`;",
  ),
  fields(
    "trustDomains * matches plain text",
    'if (v === "*") return (p) => p.principal.startsWith("spiffe://");',
    'if (v === "*") return () => true;',
  ),
  fields(
    "requestPrincipals ignore the issuer",
    "  } else {\n    mi = (t) => t === iss;",
    "  } else {\n    mi = ANY_NON_EMPTY;",
  ),
  fields(
    "requestPrincipals iss/* ignores the issuer",
    "      mi = (t) => t === iss;\n      ms = sub",
    "      mi = ANY_NON_EMPTY;\n      ms = sub",
  ),
  fields(
    "requestPrincipals match without a token",
    "return (p) => p.iss !== undefined && p.sub !== undefined && mi(p.iss) && ms(p.sub);",
    'return (p) => mi(p.iss ?? "x") && ms(p.sub ?? "x");',
  ),
  fields(
    "ipBlocks read the remote IP",
    'ipMatcher("sourceIp", `${where}.ipBlocks`)',
    'ipMatcher("remoteIp", `${where}.ipBlocks`)',
  ),
  fields(
    "remoteIpBlocks read the peer IP",
    'ipMatcher("remoteIp", `${where}.remoteIpBlocks`)',
    'ipMatcher("sourceIp", `${where}.remoteIpBlocks`)',
  ),
  fields(
    "remote IP has no default (the peer)",
    'which === "remoteIp" ? p.r.remoteIp ?? p.r.sourceIp : p.r[which]',
    'which === "remoteIp" ? p.r.remoteIp : p.r[which]',
  ),
  fields(
    "IPs match outside the block",
    "return ip !== null && cidrContains(block, ip);",
    "return ip !== null;",
  ),
  fields(
    "the IP cache is shared between attributes",
    "  let ip = p[which];\n",
    "  let ip = p.sourceIp ?? p.remoteIp ?? p.destinationIp ?? p[which];\n",
  ),
  // not* and value lists.
  predicates(
    "notValues ignored when values are set",
    "if (yes && no) return (p) => yes(p) && !no(p);",
    "if (yes && no) return yes;",
  ),
  predicates("notValues alone never match", "if (no) return (p) => !no(p);", "if (no) return () => false;"),
  predicates("only the first value of a list counts", "if (ps.length <= 1) return ps[0];", "return ps[0];"),
  // Operation fields.
  fields(
    "hosts are case-sensitive",
    'wildcardMatcher(v, { ignoreCase: true, star: "any" })',
    'wildcardMatcher(v, { star: "any" })',
  ),
  fields("hosts always match", "return (p) => p.r.host !== undefined && m(p.r.host);", "return () => true;"),
  fields("methods always match", "return (p) => m(p.r.method);", "return () => true;"),
  fields("methods ignore case", "return (p) => m(p.r.method);", "return (p) => m(p.r.method.toUpperCase());"),
  fields("ports always match", "return (p) => p.r.port === n;", "return () => true;"),
  m(
    "paths are not normalized",
    "request.pathNormalized ? request.path : normalizePath(request.path).path",
    "request.path",
  ),
  fields("path templates always match", "return (p) => re.test(p.path);", "return () => true;"),
  fields(
    "paths always match",
    "  const m = wildcardMatcher(v);\n  return (p) => m(p.path);",
    "  return () => true;",
  ),
  // Conditions.
  conditions(
    "destination.ip reads the source IP",
    'return ipMatcher("destinationIp", where);',
    'return ipMatcher("sourceIp", where);',
  ),
  conditions(
    "destination.port always matches",
    'case "destination.port":\n      return portMatcher(where);',
    `case "destination.port":\n      ${ALWAYS}`,
  ),
  conditions(
    "source.namespace always matches",
    'case "source.namespace":\n      return namespaceMatcher;',
    `case "source.namespace":\n      ${ALWAYS}`,
  ),
  conditions(
    "source.trustDomain always matches",
    'case "source.trustDomain":\n      return trustDomainMatcher;',
    `case "source.trustDomain":\n      ${ALWAYS}`,
  ),
  conditions(
    "request.auth.principal always matches",
    'case "request.auth.principal":\n      return requestPrincipalMatcher;',
    `case "request.auth.principal":\n      ${ALWAYS}`,
  ),
  conditions(
    "request.auth.audiences reads azp",
    'return claimMatcher(["aud"]);',
    'return claimMatcher(["azp"]);',
  ),
  conditions(
    "connection.sni always matches",
    "return (p) => p.r.sni !== undefined && m(p.r.sni);",
    "return () => true;",
  ),
  conditions(
    "request.headers read a case-sensitive name",
    "return headerMatcher(name.toLowerCase());",
    "return headerMatcher(name);",
  ),
  conditions("request.headers always match", "return h !== undefined && m(h);", "return true;"),
  conditions(
    "list claims match when any element exists",
    'if (typeof e === "string" && m(e)) return true;',
    'if (typeof e === "string") return true;',
  ),
  conditions(
    "nested claims read only the first name",
    "for (const k of path) {",
    "for (const k of path.slice(0, 1)) {",
  ),
  conditions(
    "claims always match",
    'if (typeof c === "string") return m(c);',
    'if (typeof c === "string") return true;',
  ),
  // Combination and order.
  predicates(
    "conditions are ORed",
    "for (let i = 0; i < list.length; i++) if (!list[i](p)) return false;\n    return true;",
    "for (let i = 0; i < list.length; i++) if (list[i](p)) return true;\n    return false;",
  ),
  m("DENY is not checked", "if (denied) return denied;", ""),
  actionRules(
    "an ALLOW policy without rules allows all",
    "this.policies = policies.length;",
    "this.policies = policies.filter((p) => rulesOf(p).length > 0).length;",
  ),
];
