/**
 * Request targets as AuthorizationPolicy `paths`, routing and the application see them: the mesh's
 * path normalization (`meshConfig.pathNormalization.normalization`: NONE, BASE, MERGE_SLASHES or
 * DECODE_AND_MERGE_SLASHES), and the `{*}`/`{**}` path templates. One normalization result is what
 * policies match, what routes match and what is forwarded.
 *
 * Source: istio.io/latest/docs/reference/config/security/normalization ("Path related"), Istio's
 * "Security best practices: path normalization" (the options, applied in the order: decode
 * `%2F`/`%5C`, RFC 3986 normalization, merge slashes), Envoy's HttpConnectionManager
 * `path_with_escaped_slashes_action`, `normalize_path` and `merge_slashes`, and Envoy's
 * uri_template matcher.
 *
 * @module
 */
import { DEFAULT_PROXY_SETTINGS, type PathNormalization } from "../../proxy_settings/settings.ts";
import { escapeRegExp } from "./string_match.ts";

/** A request target after {@link normalizePath}. */
export interface NormalizedPath {
  /** The normalized path, without query: what `paths` and routes match, and what is forwarded. */
  path: string;
  /** The query with its `?`, or empty; kept for the application, ignored by policies. */
  query: string;
  /**
   * The authority of an absolute-form target (`http://host:port/p`): it replaces the Host header
   * (RFC 9112 section 3.2.2); undefined for an origin-form target.
   */
  authority: string | undefined;
  /** The lower-case scheme of an absolute-form target, else empty. */
  scheme: string;
  /** Whether `path + query` differs from the target received (the forwarded target changes). */
  changed: boolean;
}

/** Why a target is refused: the proxy answers 400. */
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

/** Envoy's UNESCAPE_AND_FORWARD: `%2F`/`%2f` become `/`, `%5C`/`%5c` become `\`, in the path only. */
function unescapeSlashes(path: string): string {
  if (!path.includes("%")) return path;
  return path.replace(/%(2f|5c)/gi, (m) => m[2] === "f" || m[2] === "F" ? "/" : "\\");
}

const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/;

/**
 * Normalizes a request target with one of Istio's options, applied in Istio's (Envoy's) order:
 *
 * 1. DECODE_AND_MERGE_SLASHES only: `%2F`, `%2f`, `%5C`, `%5c` decoded to `/` and `\`;
 * 2. BASE and above (Envoy's `normalize_path`): percent-encoded unreserved characters (`%2d`,
 *    `%2e`, digits, letters, `%5f`, `%7e`) decoded once, `\` made `/`, `.` and `..` segments
 *    resolved per RFC 3986;
 * 3. MERGE_SLASHES and DECODE_AND_MERGE_SLASHES: runs of `/` merged into one.
 *
 * NONE changes nothing. The query is split off under every option (policies ignore it, the
 * application still gets it unchanged). An absolute-form target (`http://host/p`) is reduced to its
 * path, its authority returned; `*` (OPTIONS) is kept.
 *
 * @param target the request target as received
 * @param normalization the mesh's option; DEFAULT_PROXY_SETTINGS' when absent
 * @throws {PathError} under every option: a `#` anywhere in the target (Envoy's
 *   `http_reject_path_with_fragment`, CVE-2021-32779), `%00` in the path (Istio: 400), an
 *   absolute-form target with an empty authority or with userinfo (RFC 9110 section 4.2.4)
 */
export function normalizePath(
  target: string,
  normalization: PathNormalization = DEFAULT_PROXY_SETTINGS.pathNormalization,
): NormalizedPath {
  if (target.includes("#")) throw new PathError("the request target contains a fragment (#)");
  let t = target;
  let authority: string | undefined;
  let scheme = "";
  if (!t.startsWith("/") && t !== "*") {
    const m = ABSOLUTE_FORM.exec(t);
    if (m) {
      scheme = m[1].toLowerCase();
      authority = m[2];
      if (authority === "") throw new PathError("the absolute-form target has no authority");
      if (authority.includes("@")) throw new PathError("the absolute-form target has userinfo");
      t = t.slice(m[0].length);
      if (!t.startsWith("/")) t = "/" + t;
    }
  }
  const q = t.indexOf("?");
  const raw = q < 0 ? t : t.slice(0, q);
  const query = q < 0 ? "" : t.slice(q);
  if (raw === "*") return { path: raw, query, authority, scheme, changed: t !== target };
  if (raw.includes("%00")) throw new PathError("the path contains %00");
  let path = raw;
  if (normalization === "DECODE_AND_MERGE_SLASHES") path = unescapeSlashes(path);
  if (normalization !== "NONE") {
    path = decodeUnreserved(path);
    if (path.includes("\\")) path = path.replaceAll("\\", "/");
    if (path.includes("/.")) path = removeDotSegments(path);
  }
  if (
    (normalization === "MERGE_SLASHES" || normalization === "DECODE_AND_MERGE_SLASHES") && path.includes("//")
  ) {
    path = path.replace(/\/{2,}/g, "/");
  }
  return { path, query, authority, scheme, changed: path !== raw || t !== target };
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
