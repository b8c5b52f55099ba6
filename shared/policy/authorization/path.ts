/**
 * Request paths as AuthorizationPolicy `paths` and `notPaths` see them: Istio's default BASE
 * normalization, and the `{*}`/`{**}` path templates. Source: istio.io/latest/docs/reference/config/
 * security/normalization ("Path related" 1, 2, 4 and 5) and Envoy's uri_template matcher.
 *
 * @module
 */
import { escapeRegExp } from "./string_match.ts";

/** A request target after {@link normalizePath}. */
export interface NormalizedPath {
  /** The normalized path, without query: what `paths` match. */
  path: string;
  /** The query with its `?`, or empty; kept for the application, ignored by policies. */
  query: string;
  /** Whether `path + query` differs from the target received (the forwarded target changes). */
  changed: boolean;
}

/** Why a target is refused: Istio answers 400. */
export class PathError extends Error {
  /**
   * Makes the error.
   *
   * @param message what is wrong with the path
   */
  constructor(message: string) {
    super(message);
    this.name = "PathError";
  }
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

function decodeUnreserved(path: string): string {
  if (!path.includes("%")) return path;
  return path.replace(/%([0-9A-Fa-f]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    if (c === "\0") throw new PathError("the path contains %00");
    return UNRESERVED.test(c) ? c : m;
  });
}

/** RFC 3986 section 5.2.4, remove_dot_segments, on an absolute path. */
function removeDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split("/");
  // segments[0] is the empty string before the leading "/".
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i];
    const last = i === segments.length - 1;
    if (s === ".") {
      if (last) out.push("");
    } else if (s === "..") {
      out.pop();
      if (last) out.push("");
    } else out.push(s);
  }
  return "/" + out.join("/");
}

/**
 * BASE normalization of a request target, as Istio's default (Envoy's `normalize_path`): percent-
 * encoded unreserved characters (`%2d`, `%2e`, digits, letters, `%5f`, `%7e`) decoded once, `\` made
 * `/`, and `.` and `..` segments resolved per RFC 3986. `%2f` and `%5c` stay encoded; slashes are not
 * merged. The query is split off: policies ignore it, the application still gets it. An
 * absolute-form target (`http://host/p`) is reduced to its path; `*` (OPTIONS) is kept.
 *
 * @param target the request target as received
 * @throws {PathError} when the path contains `%00` (Istio: 400)
 */
export function normalizePath(target: string): NormalizedPath {
  let t = target;
  if (!t.startsWith("/") && t !== "*") {
    const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(t);
    if (m) t = t.slice(m[0].length) || "/";
  }
  const q = t.indexOf("?");
  const raw = q < 0 ? t : t.slice(0, q);
  const query = q < 0 ? "" : t.slice(q);
  if (raw === "*") return { path: raw, query, changed: t !== target };
  let path = decodeUnreserved(raw);
  if (path.includes("\\")) path = path.replaceAll("\\", "/");
  if (path.includes("/.")) path = removeDotSegments(path);
  return { path, query, changed: path !== raw || t !== target };
}

/** Whether a `paths` value uses `{*}` or `{**}`. */
export function isPathTemplate(value: string): boolean {
  return value.includes("{*}") || value.includes("{**}");
}

// Envoy's uri_template: `*` is one segment of pchars, `**` any number of segments (the rest).
const ONE_SEGMENT = "[A-Za-z0-9\\-._~%!$&'()+,;:@=]+";
const ANY_SEGMENTS = "[A-Za-z0-9\\-._~%!$&'()+,;:@=/]*";

/**
 * Compiles a path template (`/foo/{*}/bar`, `/api/{**}`) to a RegExp of the whole path: `{*}` is one
 * non-empty segment, `{**}` zero or more characters including `/` (so `/api/{**}` matches `/api/`
 * and `/api/a/b`, not `/api`).
 */
export function pathTemplateRegExp(template: string): RegExp {
  const parts = template.split(/(\{\*\*\}|\{\*\})/);
  const source = parts.map((p) => p === "{*}" ? ONE_SEGMENT : p === "{**}" ? ANY_SEGMENTS : escapeRegExp(p))
    .join("");
  return new RegExp(`^${source}$`);
}
