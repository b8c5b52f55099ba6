/**
 * The condition keys of AuthorizationPolicy `when` clauses, as Istio documents them
 * (istio.io/latest/docs/reference/config/security/conditions/), and the checks on their values
 * (Istio's ValidateAttribute). Unlike Istio, an unknown key is always an error here: a typo in a
 * key would otherwise make a DENY rule match nothing.
 *
 * @module
 */
import { isIpOrCidr } from "./ip.ts";

/** Keys that take a bracketed name, e.g. `request.headers[User-Agent]`, `request.auth.claims[groups]`. */
export const BRACKETED_CONDITION_KEYS: readonly string[] = ["request.headers", "request.auth.claims"];

/** Keys used as written. */
export const PLAIN_CONDITION_KEYS: readonly string[] = [
  "source.ip",
  "remote.ip",
  "source.namespace",
  "source.principal",
  "source.serviceAccount",
  "source.trustDomain",
  "request.auth.principal",
  "request.auth.audiences",
  "request.auth.presenter",
  "destination.ip",
  "destination.port",
  "connection.sni",
];

const REPLACED: Record<string, string> = {
  "destination.namespace": "it is replaced by the policy's metadata.namespace",
  "destination.labels": "it is replaced by the workload selector",
  "destination.name": "it was only supported in Istio's v1alpha1 RBAC",
  "destination.user": "it was only supported in Istio's v1alpha1 RBAC",
};

/**
 * Checks a condition key and its values.
 *
 * @returns the reason the key or a value is invalid, or undefined when both are fine
 */
export function checkCondition(key: string, values: readonly string[]): string | undefined {
  const empty = values.findIndex((v) => v === "");
  if (empty >= 0) return `empty value not allowed (value ${empty})`;
  const bracketed = BRACKETED_CONDITION_KEYS.find((k) => key.startsWith(k + "["));
  if (bracketed) {
    // Claims may nest: request.auth.claims[a][b]; each bracket needs a non-empty name.
    const rest = key.slice(bracketed.length);
    if (!/^(\[[^\[\]]+\])+$/.test(rest)) return `bad key "${key}": expected ${bracketed}[name]`;
    if (bracketed === "request.headers" && rest.split("]").length > 2) {
      return `bad key "${key}": request.headers takes one name`;
    }
    return undefined;
  }
  if (BRACKETED_CONDITION_KEYS.includes(key)) return `bad key "${key}": expected ${key}[name]`;
  const base = key.split("[")[0];
  if (REPLACED[base]) return `condition key "${key}" is not supported: ${REPLACED[base]}`;
  if (key.startsWith("experimental.envoy.filters.")) {
    return `condition key "${key}" is not supported: this mesh's proxy is not Envoy`;
  }
  if (!PLAIN_CONDITION_KEYS.includes(key)) {
    return `unknown condition key "${key}"; known keys: ${
      [...PLAIN_CONDITION_KEYS, ...BRACKETED_CONDITION_KEYS.map((k) => k + "[...]")].join(", ")
    }`;
  }
  switch (key) {
    case "source.ip":
    case "remote.ip":
    case "destination.ip": {
      const bad = values.find((v) => !isIpOrCidr(v));
      return bad === undefined ? undefined : `"${bad}" is not an IP address or CIDR range`;
    }
    case "destination.port": {
      const bad = values.find((v) => !/^[0-9]+$/.test(v) || Number(v) > 65535);
      return bad === undefined ? undefined : `"${bad}" is not a port in 0..65535`;
    }
    case "source.serviceAccount":
      return values.map(serviceAccountProblem).find((p) => p !== undefined);
    case "source.trustDomain":
      return values.map(wildcardProblem).find((p) => p !== undefined);
  }
  return undefined;
}

/** Istio's CheckServiceAccount for one value: `sa` or `ns/sa`, no wildcard, at most 320 characters. */
export function serviceAccountProblem(value: string): string | undefined {
  if (value === "") return "empty service account";
  if (value.includes("*")) return `wildcards are not allowed in service accounts: "${value}"`;
  if (value.length > 320) return `service account "${value.slice(0, 20)}…" is longer than 320 characters`;
  const parts = value.split("/");
  if (parts.length > 2 || parts.some((p) => p === "")) {
    return `expected "serviceAccount" or "namespace/serviceAccount", got "${value}"`;
  }
  return undefined;
}

/** Istio's CheckWildcardValues for one value: at most one `*`, only at the start or the end. */
export function wildcardProblem(value: string): string | undefined {
  const stars = value.split("*").length - 1;
  if (stars > 1) return `at most one wildcard is allowed: "${value}"`;
  if (stars === 1 && value !== "*" && !value.startsWith("*") && !value.endsWith("*")) {
    return `a wildcard is allowed only at the start or the end: "${value}"`;
  }
  return undefined;
}
