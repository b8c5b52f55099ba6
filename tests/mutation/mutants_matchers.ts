/**
 * Bugs planted in the value matchers the authorization evaluator builds on: IP and CIDR parsing and
 * containment (ip_block.ts), and Istio's wildcard strings (string_match.ts).
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

const EVALUATE_TESTS = [
  "shared/policy/authorization/evaluate_test.ts",
  "shared/policy/authorization/field_matchers_test.ts",
  "shared/policy/authorization/condition_matchers_test.ts",
];
const ip = mutant("authorization", "shared/policy/authorization/ip_block.ts", [
  "shared/policy/authorization/ip_block_test.ts",
  ...EVALUATE_TESTS,
]);
const text = mutant("authorization", "shared/policy/authorization/string_match.ts", [
  "shared/policy/authorization/string_match_test.ts",
  ...EVALUATE_TESTS,
]);

/** The matcher mutants. */
export const MATCHER_MUTANTS: readonly Mutant[] = [
  ip("CIDR mask one bit too wide", "(0xff << (8 - bits)) & 0xff", "(0xff << (7 - bits)) & 0xff"),
  ip("CIDR mask one bit too narrow", "(0xff << (8 - bits)) & 0xff", "(0xff << (9 - bits)) & 0xff"),
  ip("an IPv4 address lies in IPv6 blocks", "if (ip.length !== block.bytes.length) return false;", ""),
  ip(
    "IPv4-mapped IPv6 addresses stay IPv6",
    "if (v6 && MAPPED_PREFIX.every((b, i) => v6[i] === b)) return v6.slice(12);",
    "",
  ),
  ip(
    "an IPv4-mapped block keeps its IPv6 prefix length",
    "Math.max(0, Number(p) - 96)",
    "Number(p)",
  ),
  ip("an IPv4 prefix up to 128 accepted", "Number(p) > (v6Text ? 128 : 32)", "Number(p) > 128"),
  ip("octets over 255 accepted", "if (n > 255) return undefined;", ""),
  ip(
    "octets with leading zeros accepted",
    "if (digits === 1 && n === 0) return undefined;",
    "",
  ),
  text(
    "* matches the empty value",
    'if (p === "*") return options.star === "any" ? () => true : (t) => t.length > 0;',
    'if (p === "*") return () => true;',
  ),
  text("a suffix matches anywhere", ": (t) => t.endsWith(suffix);", ": (t) => t.includes(suffix);"),
  text("a prefix matches anywhere", ": (t) => t.startsWith(prefix);", ": (t) => t.includes(prefix);"),
  text("exact values ignore case", ": (t) => t === p;", ": (t) => t.toLowerCase() === p.toLowerCase();"),
  text(
    "ignoreCase lowers only the pattern",
    "return fold ? (t) => t.toLowerCase() === p",
    "return fold ? (t) => t === p",
  ),
  text("escapeRegExp leaves dots", "/[.*+?^${}()|[\\]\\\\\\/]/g", "/[*+?^${}()|[\\]\\\\\\/]/g"),
];
