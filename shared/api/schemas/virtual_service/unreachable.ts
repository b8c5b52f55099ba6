/**
 * VirtualService rules that can never be used: after a rule with no matches, or whose matches
 * all repeat earlier ones. Istio's analyzeUnreachableHTTPRules / analyzeUnreachableTCPRules (exact
 * duplicates only); warnings, not errors.
 *
 * @module
 */
import { type Finding, warning } from "../../finding.ts";
import { asArray, asObject, asString } from "../networking_rules.ts";

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = asObject(v);
  if (o) {
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export function checkUnreachable(rules: unknown, kind: "http" | "tls" | "tcp"): Finding[] {
  const out: Finding[] = [];
  const seen = new Map<string, number>();
  let catchAll = -1;
  const list = asArray(rules);
  const label = (i: number): string => {
    const name = kind === "http" ? asString(asObject(list[i])?.name) : undefined;
    return name ? `"${name}"` : `#${i}`;
  };
  list.forEach((rule, i) => {
    const at = ["spec", kind, i];
    const matches = asArray(asObject(rule)?.match);
    if (!asObject(rule)) return;
    if (matches.length === 0) {
      if (catchAll >= 0) {
        out.push(warning(at, `rule ${label(i)} is never used: only the last rule can have no matches`));
      }
      catchAll = i;
      return;
    }
    if (catchAll >= 0) {
      out.push(
        warning(at, `rule ${label(i)} is never used: rule ${label(catchAll)} before it has no matches`),
      );
      return;
    }
    let duplicates = 0;
    matches.forEach((m, j) => {
      const mo = asObject(m);
      // A match's name only labels it; it does not change what it matches.
      const key = canonicalJson(mo && kind === "http" ? { ...mo, name: undefined } : m);
      const prior = seen.get(key);
      if (prior !== undefined) {
        duplicates++;
        out.push(
          warning([...at, "match", j], `match #${j} is never used: rule ${label(prior)} has the same match`),
        );
      } else seen.set(key, i);
    });
    if (duplicates === matches.length) {
      out.push(warning(at, `rule ${label(i)} is never used: prior rules have all its matches`));
    }
  });
  return out;
}
