/**
 * Bugs planted in PeerAuthentication resolution (shared/policy/peer_authentication.ts): scope
 * precedence (workload over namespace over root), the oldest policy of a scope, UNSET inheritance,
 * port-level modes and selector matching.
 *
 * Left out as equivalent: the namespace tie-break of olderFirst (the policies of one scope always
 * share a namespace, so it never decides).
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

const m = mutant("peer_authentication", "shared/policy/peer_authentication.ts", [
  "shared/policy/peer_authentication_test.ts",
  "shared/policy/peer_authentication_precedence_test.ts",
  "shared/policy/peer_authentication_input_test.ts",
  "shared/policy/peer_authentication_checks_test.ts",
]);

/** The PeerAuthentication mutants. */
export const PEER_AUTHENTICATION_MUTANTS: readonly Mutant[] = [
  m(
    "namespace wins over workload",
    '["mesh", "namespace", "workload"] as const',
    '["mesh", "workload", "namespace"] as const',
  ),
  m(
    "mesh wins over namespace",
    '["mesh", "namespace", "workload"] as const',
    '["namespace", "mesh", "workload"] as const',
  ),
  m("workload level ignored", '["mesh", "namespace", "workload"] as const', '["mesh", "namespace"] as const'),
  m(
    "default mode is STRICT",
    'let mode: EffectiveMtlsMode = "PERMISSIVE";',
    'let mode: EffectiveMtlsMode = "STRICT";',
  ),
  m(
    "UNSET replaces the wider mode with PERMISSIVE",
    'if (mode === undefined || mode === "UNSET") return undefined;',
    'if (mode === undefined) return undefined;\n  if (mode === "UNSET") return "PERMISSIVE";',
  ),
  m(
    "selectors always match",
    "return Object.entries(matchLabels).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);",
    "return true;",
  ),
  m(
    "selectors match on any one label",
    "return Object.entries(matchLabels).every(([k, v]) =>",
    "return Object.entries(matchLabels).some(([k, v]) =>",
  ),
  m(
    "selectors ignore label values",
    "Object.hasOwn(labels, k) && labels[k] === v);",
    "Object.hasOwn(labels, k));",
  ),
  m(
    "selectors must equal the labels",
    "return Object.entries(matchLabels).every(([k, v]) =>",
    "return Object.keys(matchLabels).length === Object.keys(labels).length && Object.entries(matchLabels).every(([k, v]) =>",
  ),
  m("inherited keys match selectors", "Object.hasOwn(labels, k) && labels[k] === v);", "labels[k] === v);"),
  m(
    "root-namespace selectors apply",
    "} else if (pns !== rootNamespace && selects(matchLabels, labels)) {",
    "} else if (selects(matchLabels, labels)) {",
  ),
  m("other namespaces' policies apply", "if (pns !== namespace && pns !== rootNamespace) continue;", ""),
  m(
    "root namespace policies are namespace-wide",
    "(pns === rootNamespace ? mesh : ns).push(p);",
    "ns.push(p);",
  ),
  m(
    "newest policy of a scope wins",
    "if (best === undefined || olderFirst(c, best) < 0) best = c;",
    "if (best === undefined || olderFirst(c, best) > 0) best = c;",
  ),
  m(
    "missing creationTimestamp is the newest",
    "if (ts === undefined) return -Infinity;",
    "if (ts === undefined) return Infinity;",
  ),
  m(
    "ties broken by name reversed",
    "return a.metadata.name < b.metadata.name ? -1 : 1;",
    "return a.metadata.name < b.metadata.name ? 1 : -1;",
  ),
  m(
    "creationTimestamp not validated",
    "const ms = RFC3339.test(ts) ? Date.parse(ts) : NaN;",
    "const ms = Date.parse(ts);",
  ),
  m(
    "portLevelMtls applies to unbound ports",
    "if (wp !== undefined && portLevel && portBoundToService) {",
    "if (wp !== undefined && portLevel) {",
  ),
  m(
    "portLevelMtls of a namespace-wide policy applies",
    "const wp = chosen.workload;",
    "const wp = chosen.workload ?? chosen.namespace;",
  ),
  m(
    "port keys with leading zeros ignored",
    "if (/^[0-9]+$/.test(key) && Number(key) === port) return value;",
    "",
  ),
  m(
    "a port-level UNSET replaces the workload mode",
    "const m = explicitMode(entry?.mode, wp, `portLevelMtls[${port}].mode`);",
    'const m = explicitMode(entry?.mode, wp, `portLevelMtls[${port}].mode`) ?? "PERMISSIVE";',
  ),
  m("port validation removed", "if (!Number.isInteger(port) || port < 1 || port > 65535) {", "if (false) {"),
  m(
    "bad modes accepted as PERMISSIVE",
    "if (EFFECTIVE_MODES.has(mode)) return mode as EffectiveMtlsMode;",
    'return EFFECTIVE_MODES.has(mode) ? mode as EffectiveMtlsMode : "PERMISSIVE";',
  ),
  m("decidedBy stays the default", "decidedBy = { scope, policy: refOf(p) };", ""),
];
