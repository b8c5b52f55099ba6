/**
 * Istio's string values in AuthorizationPolicy fields and conditions: `*` alone matches any
 * non-empty value, a leading `*` a suffix, a trailing `*` a prefix, anything else the exact value.
 * Source: Istio's StringMatcherWithPrefix and HeaderMatcher (pilot/pkg/security/authz/matcher).
 *
 * @module
 */

/** A compiled wildcard value: true when the text matches. */
export type TextMatcher = (text: string) => boolean;

/** Options of {@link wildcardMatcher}. */
export interface WildcardOptions {
  /** Compare case-insensitively (hosts); default false. */
  ignoreCase?: boolean;
  /**
   * What `*` alone matches: `nonEmpty` (Istio's `.+` regex, the default) or `any` (a header's
   * presence match, where the empty value counts).
   */
  star?: "nonEmpty" | "any";
}

/**
 * Compiles one value of a policy field.
 *
 * @param pattern the value as written, e.g. `*`, `*.example.com`, `/admin*`, `GET`
 * @returns a matcher; with `ignoreCase` the text is lower-cased before comparing
 */
export function wildcardMatcher(pattern: string, options: WildcardOptions = {}): TextMatcher {
  const fold = options.ignoreCase === true;
  const p = fold ? pattern.toLowerCase() : pattern;
  if (p === "*") return options.star === "any" ? () => true : (t) => t.length > 0;
  if (p.startsWith("*")) {
    const suffix = p.slice(1);
    return fold ? (t) => t.toLowerCase().endsWith(suffix) : (t) => t.endsWith(suffix);
  }
  if (p.endsWith("*")) {
    const prefix = p.slice(0, -1);
    return fold ? (t) => t.toLowerCase().startsWith(prefix) : (t) => t.startsWith(prefix);
  }
  return fold ? (t) => t.toLowerCase() === p : (t) => t === p;
}

/** Escapes a literal for use inside a RegExp. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\\/]/g, "\\$&");
}
