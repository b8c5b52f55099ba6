/**
 * The matchers of a rule's `when` conditions, by key: the peer and JWT attributes, request
 * headers, JWT claims (nested by bracketed names), IPs, the destination port and the SNI (Istio's
 * condition keys, istio.io/latest/docs/reference/config/security/conditions).
 *
 * @module
 */
import { wildcardMatcher } from "./string_match.ts";
import type { Predicate } from "./predicate.ts";
import {
  ipMatcher,
  namespaceMatcher,
  portMatcher,
  principalMatcher,
  requestPrincipalMatcher,
  serviceAccountMatcher,
  trustDomainMatcher,
} from "./field_matchers.ts";

/** A claim by path (`[a][b]` nests); undefined when absent. */
export function claimAt(
  claims: Readonly<Record<string, unknown>> | undefined,
  path: readonly string[],
): unknown {
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

/**
 * The names of `[a][b]` after a condition key's attribute.
 *
 * @throws {RangeError} naming the key when `rest` is not a list of bracketed names
 */
export function bracketNames(rest: string, key: string): string[] {
  const names = [...rest.matchAll(/\[([^\[\]]+)\]/g)].map((m) => m[1]);
  if (names.length === 0 || names.map((n) => `[${n}]`).join("") !== rest) {
    throw new RangeError(`condition key "${key}": expected [name] after the attribute`);
  }
  return names;
}

export function conditionMatcher(
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
