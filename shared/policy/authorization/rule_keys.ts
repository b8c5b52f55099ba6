/**
 * The index keys of a rule: a list of request attributes, at least one of which a request must
 * have for the rule to match (a necessary condition, derived from the rule's own values). The index
 * (rule_index.ts) files the rule under each key, so that a request only evaluates the rules filed
 * under its own attributes, plus the rules without keys.
 *
 * A rule (Istio's authorization-policy reference,
 * istio.io/latest/docs/reference/config/security/authorization-policy/) matches when any `from`
 * source, any `to` operation and every `when` condition does; a source or operation when each field
 * set does; a field when any of its `values` does. So each of these is a necessary condition:
 * - the `from` list, when every source has a keyed field (the keys of all sources together);
 * - the `to` list, likewise;
 * - one `when` condition with `values` of a keyed key.
 * The cheapest one is kept: by {@link KEY_COST}, and, when a workload's rules are compiled
 * together, by how many rules share each key ({@link workloadRuleKeys}). A field is keyed when every value of it is:
 * `principals` and `source.principal` (exact, `prefix*`, `*suffix`), `trustDomains` and
 * `source.trustDomain` (as the principal prefix `<domain>/`, or a pattern's literal head),
 * `namespaces` and `source.namespace` without `*` or `/`, `serviceAccounts` and
 * `source.serviceAccount` (by their namespace), `requestPrincipals` and `request.auth.principal`
 * (exact; `iss/*` by its issuer, `*` then `/sub` by its subject), `hosts` (exact, `prefix*`,
 * `*suffix`, in lower case), `ports` and `destination.port`, exact `methods`, `paths` (exact,
 * `prefix*`, `*suffix`, a template's literal head), exact `request.headers[...]` values, exact JWT
 * claim values (`request.auth.claims[...]`, `audiences`, `presenter`), exact `connection.sni` and
 * IP blocks of prefix 8 or more (`ipBlocks`, `remoteIpBlocks`, `source.ip`, `remote.ip`,
 * `destination.ip`: by their leading bytes). `not*` fields, shorter blocks, `*` values and the other
 * wildcard forms of methods, namespaces, JWT principals, headers, claims and SNI have none: a rule
 * without keys is evaluated for every request.
 *
 * @module
 */
import { bracketNames } from "./condition_matchers.ts";
import type { IpAttribute } from "./field_matchers.ts";
import { type IpBytes, parseCidr } from "./ip_block.ts";
import { isPathTemplate } from "./path.ts";
import type {
  AuthorizationOperationView,
  AuthorizationRuleView,
  AuthorizationSourceView,
  AuthorizationValueList,
} from "./policy_view.ts";

/** The request attribute a key is compared with. */
export type KeyKind =
  | "principal"
  | "principalPrefix"
  | "principalSuffix"
  | "namespace"
  | "requestPrincipal"
  | "requestIssuer"
  | "requestSubject"
  | "host"
  | "hostPrefix"
  | "hostSuffix"
  | "sni"
  | "port"
  | "method"
  | "path"
  | "pathPrefix"
  | "pathSuffix"
  | "header"
  | "claim"
  | "ip";

/**
 * One key: the request matches it when its attribute `kind` equals `value` (`pathPrefix` and
 * `principalPrefix`: starts with, `pathSuffix` and `principalSuffix`: ends with, the principal
 * read without `spiffe://`; `namespace`: a `/ns/<value>/` segment of the peer principal;
 * `requestIssuer` and `requestSubject`: the JWT's issuer or subject).
 */
export interface RuleKey {
  /** Which attribute. */
  kind: KeyKind;
  /**
   * The header name (lower case) of a `header` key, the JWT issuer of a `requestPrincipal` key, the
   * claim's path as a JSON list of names of a `claim` key, the attribute (`sourceIp`, `remoteIp`,
   * `destinationIp`) of an `ip` key, else "".
   */
  scope: string;
  /**
   * The value: a port number for `port`, the JWT subject for `requestPrincipal`, the host in lower
   * case, for `ip` the block's leading bytes (see {@link ipKeyOf}).
   */
  value: string | number;
}

/**
 * How many requests a key lets through, roughly (lower is more selective): a principal or exact
 * path names one caller or resource, a method or port is shared by many rules.
 */
export const KEY_COST: Readonly<Record<KeyKind, number>> = {
  principal: 1,
  principalPrefix: 3,
  principalSuffix: 4,
  requestPrincipal: 1,
  requestSubject: 2,
  requestIssuer: 5,
  path: 1,
  header: 2,
  claim: 2,
  ip: 4,
  namespace: 2,
  host: 2,
  hostPrefix: 3,
  hostSuffix: 4,
  sni: 2,
  pathPrefix: 3,
  pathSuffix: 4,
  port: 6,
  method: 8,
};

type KeyOf = (v: string) => RuleKey | undefined;

/** Istio's string values: `*` alone or at either end is a wildcard; only the rest are exact. */
const isExact = (v: string): boolean => !v.startsWith("*") && !v.endsWith("*");

/** principalMatcher's wildcard forms on the principal without `spiffe://`: exact, `prefix*`, `*suffix`. */
const principalKey: KeyOf = (v) => {
  if (v === "*") return undefined;
  if (v.startsWith("*")) return { kind: "principalSuffix", scope: "", value: v.slice(1) };
  if (v.endsWith("*")) return { kind: "principalPrefix", scope: "", value: v.slice(0, -1) };
  return { kind: "principal", scope: "", value: v };
};

/**
 * trustDomainMatcher needs the principal to start with `spiffe://<domain>/`, or with `spiffe://`
 * and a pattern's head (the text before its `*`; `*` alone has none).
 */
const trustDomainKey: KeyOf = (v) => {
  const star = v.indexOf("*");
  const head = star < 0 ? `${v}/` : v.slice(0, star);
  return head === "" ? undefined : { kind: "principalPrefix", scope: "", value: head };
};

/**
 * A service account (`sa` in the policy's namespace, or `ns/sa`) needs `/ns/<ns>/` in the peer
 * principal (serviceAccountMatcher's pattern), so it is filed under that namespace.
 */
const serviceAccountKey = (policyNamespace: string): KeyOf => (v) => {
  const slash = v.indexOf("/");
  const ns = slash < 0 ? policyNamespace : v.slice(0, slash);
  return ns.includes("/") ? undefined : { kind: "namespace", scope: "", value: ns };
};

const namespaceKey: KeyOf = (v) =>
  !v.includes("*") && !v.includes("/") ? { kind: "namespace", scope: "", value: v } : undefined;

/**
 * Split at the last `/` as requestPrincipalMatcher does: `iss/sub`, or `iss` with an empty subject;
 * a value with a `/` that starts with `*` compares the subject exactly, one that ends with `*` the
 * issuer.
 */
const requestPrincipalKey: KeyOf = (v) => {
  const idx = v.lastIndexOf("/");
  if (isExact(v)) {
    return idx < 0
      ? { kind: "requestPrincipal", scope: v, value: "" }
      : { kind: "requestPrincipal", scope: v.slice(0, idx), value: v.slice(idx + 1) };
  }
  if (v === "*" || idx < 0) return undefined;
  return v.startsWith("*")
    ? { kind: "requestSubject", scope: "", value: v.slice(idx + 1) }
    : { kind: "requestIssuer", scope: "", value: v.slice(0, idx) };
};

/** The host matcher's forms, in lower case: exact, `prefix*`, `*suffix`. */
const hostKey: KeyOf = (v) => {
  const h = v.toLowerCase();
  if (h === "*") return undefined;
  if (h.startsWith("*")) return { kind: "hostSuffix", scope: "", value: h.slice(1) };
  if (h.endsWith("*")) return { kind: "hostPrefix", scope: "", value: h.slice(0, -1) };
  return { kind: "host", scope: "", value: h };
};

const sniKey: KeyOf = (v) => isExact(v) ? { kind: "sni", scope: "", value: v } : undefined;

const portKey: KeyOf = (v) =>
  /^[0-9]+$/.test(v) && Number(v) <= 65535 ? { kind: "port", scope: "", value: Number(v) } : undefined;

const methodKey: KeyOf = (v) => isExact(v) ? { kind: "method", scope: "", value: v } : undefined;

/** A template matches only paths that start with its literal head (`/api/` of `/api/{*}/x`). */
const pathKey: KeyOf = (v) => {
  if (isPathTemplate(v)) {
    const head = v.slice(0, v.indexOf("{*"));
    return head === "" ? undefined : { kind: "pathPrefix", scope: "", value: head };
  }
  if (v === "*") return undefined;
  if (v.startsWith("*")) return { kind: "pathSuffix", scope: "", value: v.slice(1) };
  if (v.endsWith("*")) return { kind: "pathPrefix", scope: "", value: v.slice(0, -1) };
  return { kind: "path", scope: "", value: v };
};

/** A claim value (`request.auth.claims[...]`, `audiences`, `presenter`): a string claim or a list's element. */
const claimKey = (path: readonly string[]): KeyOf => (v) =>
  isExact(v) ? { kind: "claim", scope: JSON.stringify(path), value: v } : undefined;

/**
 * The number an address is filed under: its length (4 or 16) and first two bytes, or first byte
 * (`bits` 8). An address lies in a block of prefix 16 or more only if its first two bytes are the
 * block's, in a block of prefix 8 to 15 only if its first byte is.
 */
export function ipKeyOf(bytes: IpBytes, bits: 8 | 16): number {
  return bits === 16 ? bytes.length * 65536 + bytes[0] * 256 + bytes[1] : bytes.length * 256 + bytes[0];
}

/** A block of prefix 8 or more: its leading bytes (scope `<attribute>/<bits>`); shorter blocks have none. */
const ipKey = (which: IpAttribute): KeyOf => (v) => {
  const block = parseCidr(v);
  if (block === undefined || block.prefix < 8) return undefined;
  const bits = block.prefix >= 16 ? 16 : 8;
  return { kind: "ip", scope: `${which}/${bits}`, value: ipKeyOf(block.bytes, bits) };
};

const headerKey = (name: string): KeyOf => (v) =>
  isExact(v) ? { kind: "header", scope: name, value: v } : undefined;

/** The keys of a field's values, or undefined when it has none or one value has no key. */
function fieldKeys(values: AuthorizationValueList, keyOf: KeyOf): RuleKey[] | undefined {
  if (!values || values.length === 0) return undefined;
  const keys: RuleKey[] = [];
  for (const v of values) {
    const k = keyOf(v);
    if (k === undefined) return undefined;
    keys.push(k);
  }
  return keys;
}

/** The weight of a key: how many candidate rules it is expected to let through (lower is better). */
export type KeyWeight = (k: RuleKey) => number;

const byCost: KeyWeight = (k) => KEY_COST[k.kind];

/**
 * The lightest of the candidate key lists (each a necessary condition), or undefined; the first of
 * equal ones. Every list is weighed (workloadRuleKeys records the keys this way).
 */
function cheapest(options: readonly (RuleKey[] | undefined)[], weigh: KeyWeight): RuleKey[] | undefined {
  let best: RuleKey[] | undefined;
  let least = Infinity;
  for (const o of options) {
    if (o === undefined) continue;
    let cost = 0;
    for (const k of o) cost += weigh(k);
    if (cost < least) {
      best = o;
      least = cost;
    }
  }
  return best;
}

function sourceKeys(
  s: AuthorizationSourceView,
  policyNamespace: string,
  weigh: KeyWeight,
): RuleKey[] | undefined {
  return cheapest([
    fieldKeys(s.principals, principalKey),
    fieldKeys(s.namespaces, namespaceKey),
    fieldKeys(s.requestPrincipals, requestPrincipalKey),
    fieldKeys(s.serviceAccounts, serviceAccountKey(policyNamespace)),
    fieldKeys(s.ipBlocks, ipKey("sourceIp")),
    fieldKeys(s.remoteIpBlocks, ipKey("remoteIp")),
    fieldKeys(s.trustDomains, trustDomainKey),
  ], weigh);
}

function operationKeys(o: AuthorizationOperationView, weigh: KeyWeight): RuleKey[] | undefined {
  return cheapest([
    fieldKeys(o.paths, pathKey),
    fieldKeys(o.hosts, hostKey),
    fieldKeys(o.ports, portKey),
    fieldKeys(o.methods, methodKey),
  ], weigh);
}

/** Every alternative must be keyed: one without keys could match any request. */
function anyOfKeys<T>(list: readonly T[] | null | undefined, keysOf: (t: T) => RuleKey[] | undefined) {
  if (!list || list.length === 0) return undefined;
  const keys: RuleKey[] = [];
  for (const item of list) {
    const k = keysOf(item);
    if (k === undefined) return undefined;
    keys.push(...k);
  }
  return keys;
}

const HEADER_KEY = /^request\.headers\[([^\[\]]+)\]$/;
const CLAIMS = "request.auth.claims[";

function conditionKeyOf(key: string, policyNamespace: string): KeyOf | undefined {
  const header = HEADER_KEY.exec(key);
  if (header) return headerKey(header[1].toLowerCase());
  if (key.startsWith(CLAIMS)) return claimKey(bracketNames(key.slice(CLAIMS.length - 1), key));
  switch (key) {
    case "request.auth.audiences":
      return claimKey(["aud"]);
    case "request.auth.presenter":
      return claimKey(["azp"]);
    case "source.ip":
      return ipKey("sourceIp");
    case "remote.ip":
      return ipKey("remoteIp");
    case "destination.ip":
      return ipKey("destinationIp");
    case "source.principal":
      return principalKey;
    case "source.namespace":
      return namespaceKey;
    case "source.serviceAccount":
      return serviceAccountKey(policyNamespace);
    case "source.trustDomain":
      return trustDomainKey;
    case "request.auth.principal":
      return requestPrincipalKey;
    case "destination.port":
      return portKey;
    case "connection.sni":
      return sniKey;
  }
  return undefined;
}

const keyId = (k: RuleKey): string => `${k.kind}\0${k.scope}\0${k.value}`;

/** Drops repeated keys, so that a rule is filed once under each. */
function distinct(keys: RuleKey[]): RuleKey[] {
  const seen = new Set<string>();
  return keys.filter((k) => {
    const id = keyId(k);
    return seen.has(id) ? false : (seen.add(id), true);
  });
}

/**
 * The keys of the rules of one workload, each weighed by {@link KEY_COST} times the number of rules
 * that could be filed under it. A key that many rules share makes a long list for every request
 * that has it (200 DENY rules on `/admin/*`, each for another principal), so such rules are filed
 * under their rarer keys (the principals) when they have some. A rule whose cheapest keys by
 * {@link KEY_COST} are its own keeps them (no other choice can weigh less), so most rules are keyed
 * once.
 *
 * @param rules each rule with its policy's namespace
 * @returns the keys of each rule, as {@link ruleKeys}
 */
export function workloadRuleKeys(
  rules: readonly (readonly [AuthorizationRuleView, string])[],
): (RuleKey[] | undefined)[] {
  const counts = new Map<string, number>();
  const first = rules.map(([rule, policyNamespace]) => {
    const seen = new Set<RuleKey>();
    const keys = ruleKeys(rule, policyNamespace, (k) => (seen.add(k), KEY_COST[k.kind]));
    // One count per rule, though several of its fields or conditions may have the key.
    const ids = new Set<string>();
    for (const k of seen) ids.add(keyId(k));
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    return keys;
  });
  const weigh: KeyWeight = (k) => KEY_COST[k.kind] * (counts.get(keyId(k)) ?? 1);
  return first.map((keys, i) =>
    keys === undefined || keys.every((k) => counts.get(keyId(k)) === 1) ? keys : ruleKeys(...rules[i], weigh)
  );
}

/**
 * The keys of a rule (see the module doc).
 *
 * @param rule the rule as it is evaluated (on TCP: without its HTTP-only fields)
 * @param policyNamespace the policy's namespace (a service account without one is in it)
 * @param weigh how the candidate key lists are compared (default {@link KEY_COST}; see
 *   {@link workloadRuleKeys})
 * @returns keys, one of which every request the rule matches has; undefined when the rule has none
 *   (it is then evaluated for every request)
 */
export function ruleKeys(
  rule: AuthorizationRuleView,
  policyNamespace: string,
  weigh: KeyWeight = byCost,
): RuleKey[] | undefined {
  const options = [
    anyOfKeys(rule.from, (f) => f.source ? sourceKeys(f.source, policyNamespace, weigh) : undefined),
    anyOfKeys(rule.to, (t) => t.operation ? operationKeys(t.operation, weigh) : undefined),
  ];
  for (const c of rule.when ?? []) {
    const keyOf = conditionKeyOf(c.key, policyNamespace);
    if (keyOf) options.push(fieldKeys(c.values, keyOf));
  }
  const best = cheapest(options, weigh);
  return best && distinct(best);
}
