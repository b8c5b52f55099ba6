/**
 * Bugs planted in the authorization index (rule_keys.ts, rule_index.ts, key_hash.ts) and its
 * shared decisions (action_rules.ts, decision.ts): a rule filed under a key that a matching request
 * may lack, a request looked up under the wrong key, the merge that loses the evaluation order, and
 * a decision given to the wrong rule. The differential test (rule_index_test.ts) must catch each.
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

const DIR = "shared/policy/authorization";
const TESTS = [
  `${DIR}/rule_index_test.ts`,
  `${DIR}/rule_keys_test.ts`,
  `${DIR}/key_hash_test.ts`,
  `${DIR}/decision_test.ts`,
  `${DIR}/evaluate_test.ts`,
];
const keys = mutant("authorization", `${DIR}/rule_keys.ts`, TESTS);
const index = mutant("authorization", `${DIR}/rule_index.ts`, TESTS);
const hash = mutant("authorization", `${DIR}/key_hash.ts`, TESTS);
const rules = mutant("authorization", `${DIR}/action_rules.ts`, TESTS);
const decisions = mutant("authorization", `${DIR}/decision.ts`, TESTS);

/** The index's mutants. */
export const AUTHORIZATION_INDEX_MUTANTS: readonly Mutant[] = [
  keys(
    "wildcard values are keyed as exact",
    'const isExact = (v: string): boolean => !v.startsWith("*") && !v.endsWith("*");',
    'const isExact = (v: string): boolean => v !== "*";',
  ),
  keys(
    "namespaces with / are keyed",
    '!v.includes("*") && !v.includes("/") ? { kind: "namespace"',
    '!v.includes("*") ? { kind: "namespace"',
  ),
  keys("hosts are keyed as written", "const h = v.toLowerCase();", "const h = v;"),
  keys(
    "host suffixes are keyed as prefixes",
    'return { kind: "hostSuffix", scope: "", value: h.slice(1) };',
    'return { kind: "hostPrefix", scope: "", value: h.slice(1) };',
  ),
  keys(
    "wildcard SNI values are keyed",
    'isExact(v) ? { kind: "sni"',
    '(v !== "*") ? { kind: "sni"',
  ),
  index(
    "the Host's ends are read as received",
    "const host = r.host.toLowerCase();",
    "const host = r.host;",
  ),
  index(
    "the Host's suffixes are read forwards",
    "k = endLists(this.#hostSuffix, host, 0, true, lists, k);",
    "k = endLists(this.#hostSuffix, host, 0, false, lists, k);",
  ),
  index(
    "the SNI is not looked up",
    "if (this.#sni.size > 0 && r.sni !== undefined && (l = this.#sni.get(hashText(r.sni)))) lists[k++] = l;",
    "",
  ),
  keys(
    "a template is keyed by its whole text",
    'const head = v.slice(0, v.indexOf("{*"));',
    "const head = v;",
  ),
  keys(
    "path suffixes are keyed as prefixes",
    'return { kind: "pathSuffix", scope: "", value: v.slice(1) };',
    'return { kind: "pathPrefix", scope: "", value: v.slice(1) };',
  ),
  keys(
    "one keyed source is enough",
    "const k = keysOf(item);\n    if (k === undefined) return undefined;",
    "const k = keysOf(item);\n    if (k === undefined) continue;",
  ),
  keys(
    "notValues of a condition are keyed",
    "options.push(fieldKeys(c.values, keyOf));",
    "options.push(fieldKeys(c.values ?? c.notValues, keyOf));",
  ),
  keys(
    "JWT principals split at the first /",
    'const idx = v.lastIndexOf("/");\n  if (isExact(v)) {',
    'const idx = v.indexOf("/");\n  if (isExact(v)) {',
  ),
  index(
    "the rules without keys are skipped",
    "if (this.#residual.length > 0) lists[k++] = this.#residual;",
    "",
  ),
  index(
    "the merge stops at a rule offered twice",
    "if (rule === last) continue;",
    "if (rule === last) return -1;",
  ),
  index(
    "the lists are scanned one after the other",
    "    return this.#merge(k, p);\n",
    "    for (let i = 0; i < k; i++) if (this.#scan(this.#lists[i], p) >= 0) return this.#scan(this.#lists[i], p);\n    return -1;\n",
  ),
  index(
    "the lowest list is read to its end",
    "for (; j < l.length && l[j] <= next; j++) {",
    "for (; j < l.length; j++) {",
  ),
  index(
    "the peer's lists are kept across principals",
    "if (p.principal !== this.#peer) {",
    'if (this.#peer === "") {',
  ),
  index(
    "past the claim value limit the rest is ignored",
    "if (c.length > CLAIM_VALUES_MAX) return -1;",
    "if (c.length > CLAIM_VALUES_MAX) return k;",
  ),
  index(
    "only a list claim's first element is looked up",
    "for (const e of c) if (typeof e",
    "for (const e of c.slice(0, 1)) if (typeof e",
  ),
  index(
    "a string claim is not looked up",
    'if (typeof c === "string") {\n        if ((l = values.get(hashText(c))))',
    'if (typeof c === "string") {\n        if ((l = undefined))',
  ),
  keys(
    "wildcard claim values are keyed",
    'isExact(v) ? { kind: "claim"',
    '(v !== "*") ? { kind: "claim"',
  ),
  keys(
    "service accounts are filed under the policy's namespace",
    "const ns = slash < 0 ? policyNamespace : v.slice(0, slash);",
    "const ns = policyNamespace;",
  ),
  keys(
    "blocks shorter than 8 bits are keyed",
    "if (block === undefined || block.prefix < 8) return undefined;",
    "if (block === undefined) return undefined;",
  ),
  keys(
    "a block of 9 bits is keyed by two bytes",
    "const bits = block.prefix >= 16 ? 16 : 8;",
    "const bits = block.prefix >= 9 ? 16 : 8;",
  ),
  index(
    "every IP key reads the peer address",
    "const ip = ipOf(p, which);",
    'const ip = ipOf(p, "sourceIp");',
  ),
  index("overlapping /ns/ segments are missed", "from = at + 1;", "from = end;"),
  index(
    "past the /ns/ segment limit the rest is ignored",
    "if (n === NAMESPACE_SEGMENTS_MAX) return -1;",
    "if (n === NAMESPACE_SEGMENTS_MAX) return k;",
  ),
  index(
    "the principal is hashed with spiffe://",
    "hashRange(p.principal, 9, p.principal.length)",
    "hashRange(p.principal, 0, p.principal.length)",
  ),
  index(
    "suffixes are read forwards",
    "text.charCodeAt(backwards ? text.length - i : from + i - 1)",
    "text.charCodeAt(from + i - 1)",
  ),
  index(
    "the longest prefix is not looked up",
    "const n = Math.min(text.length - from, lengths.length - 1);",
    "const n = Math.min(text.length - from, lengths.length - 2);",
  ),
  index(
    "the principal's prefixes are read with spiffe://",
    "endLists(this.#principalPrefix, p.principal, 9, false, cache, k)",
    "endLists(this.#principalPrefix, p.principal, 0, false, cache, k)",
  ),
  index(
    "the principal's suffixes are not looked up",
    "endLists(this.#principalSuffix, p.principal, 9, true, cache, k)",
    "endLists(this.#principalSuffix, p.principal, 9, false, cache, k)",
  ),
  index(
    "the JWT issuer is looked up by the subject",
    "this.#requestIssuer.get(hashText(p.iss))",
    "this.#requestIssuer.get(hashText(p.sub))",
  ),
  index(
    "the JWT subject is looked up with the issuer",
    "this.#requestSubject.get(hashText(p.sub))",
    "this.#requestSubject.get(hashPrincipal(p.iss, p.sub))",
  ),
  keys(
    "keys are weighed without how many rules share them",
    "const weigh: KeyWeight = (k) => KEY_COST[k.kind] * (counts.get(keyId(k)) ?? 1);",
    "const weigh: KeyWeight = (k) => KEY_COST[k.kind];",
  ),
  keys(
    "a rule's keys are counted once per option",
    "for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);",
    "for (const id of ids) counts.set(id, 1);",
  ),
  keys(
    "no rule is weighed again",
    "keys === undefined || keys.every((k) => counts.get(keyId(k)) === 1) ? keys",
    "keys === undefined || true ? keys",
  ),
  keys(
    "principal suffixes are keyed as prefixes",
    'return { kind: "principalSuffix", scope: "", value: v.slice(1) };',
    'return { kind: "principalPrefix", scope: "", value: v.slice(1) };',
  ),
  keys(
    "principal prefixes keep their *",
    'return { kind: "principalPrefix", scope: "", value: v.slice(0, -1) };',
    'return { kind: "principalPrefix", scope: "", value: v };',
  ),
  keys(
    "trust domains are keyed with spiffe://",
    "const head = star < 0 ? `${v}/` : v.slice(0, star);",
    "const head = star < 0 ? `spiffe://${v}/` : v.slice(0, star);",
  ),
  keys(
    "a trust domain pattern is keyed by its whole text",
    "const head = star < 0 ? `${v}/` : v.slice(0, star);",
    "const head = star < 0 ? `${v}/` : v;",
  ),
  keys(
    "JWT principal patterns key the issuer and subject swapped",
    '? { kind: "requestSubject", scope: "", value: v.slice(idx + 1) }\n    : { kind: "requestIssuer", scope: "", value: v.slice(0, idx) };',
    '? { kind: "requestIssuer", scope: "", value: v.slice(0, idx) }\n    : { kind: "requestSubject", scope: "", value: v.slice(idx + 1) };',
  ),
  keys(
    "JWT principal patterns without / are keyed",
    'if (v === "*" || idx < 0) return undefined;',
    'if (v === "*") return undefined;',
  ),
  keys(
    "a JWT issuer pattern splits at the first /",
    ': { kind: "requestIssuer", scope: "", value: v.slice(0, idx) };',
    ': { kind: "requestIssuer", scope: "", value: v.slice(0, v.indexOf("/")) };',
  ),
  hash(
    "hosts are hashed as received",
    "h = hashStep(h, c >= 65 && c <= 90 ? c + 32 : c);",
    "h = hashStep(h, c);",
  ),
  rules(
    "one decision for every rule",
    "return this.#decisions[i] ??= matchedDecision(",
    "return this.#decisions[0] ??= matchedDecision(",
  ),
  decisions(
    "the reason of an AUDIT-reported decision is the audit's",
    "return decision(fields, () => d.reason, audit);",
    "return decision(fields, () => `audited by ${audit.policy.name}`, audit);",
  ),
];
