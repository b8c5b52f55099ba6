/**
 * Path templates in AuthorizationPolicy paths: `{*}` matches one path segment, `{**}` any number of
 * segments, and must come last among templates. Source: Istio's CheckValidPathTemplate and
 * istio.io/latest/docs/reference/config/security/authorization-policy/#Operation.
 *
 * @module
 */

const ONE = "{*}";
const ANY = "{**}";
// RFC 3986 pchar (unreserved, pct-encoded, sub-delims, ":" and "@"), as Envoy's URI template matcher.
const LITERAL = /^[a-zA-Z0-9\-._~%!$&'()+,;:@=]+$/;

/**
 * Checks one path value.
 *
 * @returns the reason the path template is malformed, or undefined when it is fine (a path without
 * templates is always fine)
 */
export function checkPathTemplates(path: string): string | undefined {
  const templated = path.includes(ONE) || path.includes(ANY);
  let sawAny = false;
  for (const seg of path.replace(/^\/+|\/+$/g, "").split("/")) {
    if (seg === ONE || seg === ANY) {
      if (sawAny) return `invalid path "${path}": {**} must be the last template`;
      if (seg === ANY) sawAny = true;
      continue;
    }
    if (seg.includes("{") || seg.includes("}")) {
      return `invalid path "${path}": "{" or "}" outside a whole-segment {*} or {**} template`;
    }
    if (templated && !LITERAL.test(seg)) {
      return `invalid path "${path}": segment "${seg}" has characters not allowed beside a template`;
    }
  }
  return undefined;
}
