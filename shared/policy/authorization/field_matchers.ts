/**
 * The matchers of a rule's `from` sources and `to` operations: peer identity (principals,
 * namespaces, service accounts, trust domains), JWT principals, IP blocks, hosts, ports, methods
 * and paths, with Istio's string and IP matching (pilot/pkg/security/authz/model: generator.go).
 *
 * @module
 */
import { type CidrBlock, cidrContains, type IpBytes, parseCidr, parseIp } from "./ip_block.ts";
import { isPathTemplate, pathTemplateRegExp } from "./path.ts";
import { escapeRegExp, type TextMatcher, wildcardMatcher } from "./string_match.ts";
import type { AuthorizationOperationView, AuthorizationSourceView } from "./policy_view.ts";
import { allOf, field, type Predicate, type Prepared } from "./predicate.ts";

function regexOnPrincipal(source: string): Predicate {
  const re = new RegExp(`^${source}$`);
  return (p) => p.principal !== "" && re.test(p.principal);
}

/** `principals`, `source.principal`: Istio's StringMatcherWithPrefix(v, "spiffe://"). */
export function principalMatcher(v: string): Predicate {
  const m = wildcardMatcher(v);
  return (p) => p.principalBody !== "" && m(p.principalBody);
}

/** `namespaces`, `source.namespace`: `.*\/ns/<ns>/.*` with `*` as `.*`. */
export function namespaceMatcher(v: string): Predicate {
  if (!v.includes("*")) {
    const needle = `/ns/${v}/`;
    return (p) => p.principal.includes(needle);
  }
  // Unanchored: the same as Istio's `.*\/ns/<ns>/.*` without the costly leading `.*`.
  const re = new RegExp(`/ns/${v.split("*").map(escapeRegExp).join(".*")}/`);
  return (p) => p.principal !== "" && re.test(p.principal);
}

/** `serviceAccounts`, `source.serviceAccount`: `sa` (the policy's namespace) or `ns/sa`. */
export function serviceAccountMatcher(policyNamespace: string): (v: string) => Predicate {
  return (v) => {
    const slash = v.indexOf("/");
    const ns = slash < 0 ? policyNamespace : v.slice(0, slash);
    const sa = slash < 0 ? v : v.slice(slash + 1);
    return regexOnPrincipal(`spiffe://.+/ns/${escapeRegExp(ns)}/(.+/|)sa/${escapeRegExp(sa)}(/.+)?`);
  };
}

/** `trustDomains`, `source.trustDomain`. */
export function trustDomainMatcher(v: string): Predicate {
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
export function requestPrincipalMatcher(v: string): Predicate {
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

/** Which address an IP field or condition reads. */
export type IpAttribute = "sourceIp" | "remoteIp" | "destinationIp";

export function ipMatcher(
  which: IpAttribute,
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

/** The request's address of that attribute, parsed once per request (kept in `p`); null when absent or bad. */
export function ipOf(p: Prepared, which: IpAttribute): IpBytes | null {
  let ip = p[which];
  if (ip === undefined) {
    const text = which === "remoteIp" ? p.r.remoteIp ?? p.r.sourceIp : p.r[which];
    ip = text === undefined ? null : parseIp(text) ?? null;
    p[which] = ip;
  }
  return ip;
}

export function portMatcher(where: string): (v: string) => Predicate {
  return (v) => {
    if (!/^[0-9]+$/.test(v) || Number(v) > 65535) throw new RangeError(`${where}: "${v}" is not a port`);
    const n = Number(v);
    return (p) => p.r.port === n;
  };
}

function pathMatcher(v: string): Predicate {
  if (isPathTemplate(v)) {
    const re = pathTemplateRegExp(v);
    return (p) => re.test(p.path);
  }
  const m = wildcardMatcher(v);
  return (p) => m(p.path);
}

export function compileSource(s: AuthorizationSourceView, policyNamespace: string, where: string): Predicate {
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

export function compileOperation(o: AuthorizationOperationView, where: string): Predicate {
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
