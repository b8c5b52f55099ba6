/**
 * The 62 request-target variants of `/headers` that the path tests send against an
 * AuthorizationPolicy DENY `paths: ["/headers"]`: dot segments, repeated and encoded slashes and
 * backslashes, encoded dots, double encoding, `;`, `#`, `%00`, case, trailing slashes and the
 * absolute form. Each row gives the path that `normalizePath` (./path.ts) yields under each of Istio's
 * options (what policies match, what routes match and what is forwarded), or null when the target is
 * refused with 400. Shared by the pure table test here, the proxy's raw-bytes test and the e2e check.
 *
 * Source: Istio's normalization reference and "Security best practices: path normalization"
 * (CVE-2021-31920), Envoy's CVE-2021-32779 (`#`), and the classic traversal tricks.
 *
 * @module
 */
import type { PathNormalization } from "../../proxy_settings/mod.ts";

/** One variant: the target as sent, and the path each option yields (null: 400). */
export interface PathVariant {
  target: string;
  expected: Readonly<Record<PathNormalization, string | null>>;
}

type Row = [string, string | null, string | null, string | null, string | null];

/** Every option gives `p`. */
const all = (t: string, p: string | null = t): Row => [t, p, p, p, p];
/** NONE keeps the target; BASE and above give `p`. */
const base = (t: string, p: string): Row => [t, t, p, p, p];
/** NONE and BASE keep it (`b` for BASE when it differs); the merging options give `m`. */
const merge = (t: string, m: string, b = t): Row => [t, t, b, m, m];
/** Only DECODE_AND_MERGE_SLASHES changes it, to `d`. */
const decode = (t: string, d: string): Row => [t, t, t, t, d];

const ROWS: Row[] = [
  all("/headers"),
  all("/headers?x=1", "/headers"),
  all("/headers#x", null),
  all("/headers?a#b", null),
  all("/headers%00", null),
  all("/%00/headers", null),
  merge("//headers", "/headers"),
  merge("///headers", "/headers"),
  base("/./headers", "/headers"),
  base("/a/../headers", "/headers"),
  base("/headers/.", "/headers/"),
  all("/headers/"),
  base("/headers/..", "/"),
  base("/headers/../headers", "/headers"),
  base("/%2e/headers", "/headers"),
  base("/%2E/headers", "/headers"),
  base("/%2e%2e/headers", "/headers"),
  base("/a/%2e%2e/headers", "/headers"),
  base("/a/%2E%2E/headers", "/headers"),
  base("/a/.%2e/headers", "/headers"),
  decode("/%2fheaders", "/headers"),
  decode("/%2Fheaders", "/headers"),
  decode("/%5cheaders", "/headers"),
  decode("/%5Cheaders", "/headers"),
  merge("/\\headers", "/headers", "//headers"),
  base("/%68eaders", "/headers"),
  base("/%68%65%61%64%65%72%73", "/headers"),
  all("/HEADERS"),
  all("/Headers"),
  base("/%48eaders", "/Headers"),
  all("/headers;x"),
  all("/%252Fheaders"),
  all("/a/%252e%252e/headers"),
  decode("/headers%2F", "/headers/"),
  decode("/headers%2f", "/headers/"),
  base("/headers/%2e", "/headers/"),
  all("/headers%20"),
  base("/a//../headers", "/a/headers"),
  merge("/a/..//headers", "/headers", "//headers"),
  merge("/.//headers", "/headers", "//headers"),
  all("http://example.com/headers", "/headers"),
  ["http://example.com//headers", "//headers", "//headers", "/headers", "/headers"],
  ["http://example.com/a/../headers", "/a/../headers", "/headers", "/headers", "/headers"],
  base("/headers/./", "/headers/"),
  base("/./././headers", "/headers"),
  base("/a/b/../../headers", "/headers"),
  base("/../headers", "/headers"),
  base("/../../headers", "/headers"),
  base("/headers\\", "/headers/"),
  decode("/%5c%5cheaders", "/headers"),
  decode("/%2f%2fheaders", "/headers"),
  decode("/%2F..%2Fheaders", "/headers"),
  ["/%2e%2e%2fheaders", "/%2e%2e%2fheaders", "/..%2fheaders", "/..%2fheaders", "/headers"],
  base("/a%23/../headers", "/headers"),
  all("/headers%3F"),
  base("/%2e", "/"),
  base("/headers/%2E%2E/headers", "/headers"),
  base("/HEADERS/../headers", "/headers"),
  all("/headers/..;/"),
  all("/headers.."),
  merge("/\\/headers", "/headers", "///headers"),
  decode("/%5C../headers", "/headers"),
];

/** The variants, in a fixed order. */
export const PATH_VARIANTS: readonly PathVariant[] = ROWS.map(([target, n, b, m, d]) => ({
  target,
  expected: { NONE: n, BASE: b, MERGE_SLASHES: m, DECODE_AND_MERGE_SLASHES: d },
}));
