/**
 * Request-target and head cases: 62 spellings of a path that a DENY `paths: ["/headers"]` policy on
 * httpbin must catch (or that must not reach /headers at all), method spellings against a DENY
 * `methods: ["DELETE"]`, oversized heads, and the controls that show the suite can fail.
 *
 * "Envoy" is Envoy as Istio configures it by default (pathNormalization BASE: normalize_path on,
 * merge_slashes off, escaped slashes kept; runtime guard http_reject_path_with_fragment on), and its
 * HTTP/1 codec's limits (60 KiB head, 100 headers).
 *
 * @module
 */
import { type CaseContext, DELETE_REACHED, envoyRefuses, HEADERS_BODY, type HostileCase } from "./corpus.ts";

/** `GET <target>` with Connection: close, so that the answer ends the exchange. */
function get(c: CaseContext, target: string, method = "GET"): string {
  return `${method} ${target} HTTP/1.1\r\nHost: ${c.host}\r\nConnection: close\r\n\r\n`;
}

const DENIED = "403 (normalized to /headers)";
const NOT_FOUND = "404 from the app (not /headers)";
const BASE_OPEN =
  "200 /headers (open under Istio's default BASE; closed by MERGE_SLASHES / DECODE_AND_MERGE_SLASHES)";

/** [target, what Envoy does]; targets are raw (sent byte for byte). */
const PATHS: [string, string][] = [
  ["//headers", BASE_OPEN],
  ["///headers", BASE_OPEN],
  ["/headers/", NOT_FOUND],
  ["/headers//", NOT_FOUND],
  ["/headers/.", "normalized to /headers/ (a trailing dot segment leaves the slash): app 404"],
  ["/headers/./", NOT_FOUND],
  ["/./headers", DENIED],
  ["/../headers", DENIED],
  ["/x/../headers", DENIED],
  ["/x/./../headers", DENIED],
  ["/x/..//headers", BASE_OPEN],
  ["/x//../headers", "normalized to /x/headers (.. removes the empty segment): app 404"],
  ["/%2e/headers", DENIED],
  ["/%2E/headers", DENIED],
  ["/%2e%2e/headers", DENIED],
  ["/x/%2e%2e/headers", DENIED],
  ["/x/%2E%2E/headers", DENIED],
  ["/x/.%2e/headers", DENIED],
  ["/x/%2e./headers", DENIED],
  ["/%2fheaders", "kept as %2f (KEEP_UNCHANGED); the app decodes it: " + BASE_OPEN],
  ["/%2Fheaders", "kept as %2F (KEEP_UNCHANGED); the app decodes it: " + BASE_OPEN],
  ["/%252Fheaders", "kept: app 404"],
  ["/%252fheaders", "kept: app 404"],
  ["/%5Cheaders", "kept as %5C (KEEP_UNCHANGED): app 404"],
  ["/%5cheaders", "kept as %5c (KEEP_UNCHANGED): app 404"],
  ["/\\headers", "\\ becomes /, giving //headers: " + BASE_OPEN],
  ["/x\\..\\headers", "\\ → /, dot segments removed: " + DENIED],
  ["/x/..%2Fheaders", "kept (escaped slash): app 404"],
  ["/x/..%2fheaders", "kept (escaped slash): app 404"],
  ["/x/..%5Cheaders", "kept: app 404"],
  ["/x%2F..%2Fheaders", "kept: app 404"],
  ["/%68eaders", "unreserved %68 decoded: " + DENIED],
  ["/%68%65%61%64%65%72%73", "unreserved decoded: " + DENIED],
  ["/head%65rs", "unreserved decoded: " + DENIED],
  ["/heade%72s/", NOT_FOUND],
  ["/headers%2F", "kept; app 404"],
  ["/headers%20", "kept; app 404"],
  ["/headers%00", "400 (%00 in path)"],
  ["/headers%09", "kept; app 404"],
  ["/headers;", "kept (; is a path char); app 404"],
  ["/headers;x=y", "kept; app 404"],
  ["/;/headers", "kept; app 404"],
  ["/headers;/", "kept; app 404"],
  ["/HEADERS", "not /headers (paths match case-sensitively): app 404"],
  ["/Headers", "app 404"],
  ["/headerS", "app 404"],
  ["/headers?", "403 (query split off)"],
  ["/headers?x=1", "403 (query split off)"],
  ["/headers?x=/../ip", "403 (query split off)"],
  ["/headers#x", "400 (fragment rejected, CVE-2021-32779)"],
  ["/headers#", "400 (fragment rejected)"],
  ["/headers?#", "400 (fragment rejected)"],
  ["/headers%23x", "kept; app 404"],
  ["/headers%3Fx", "kept; app 404"],
  ["/\xef\xbd\x88eaders", "400: raw non-ASCII byte in the path"],
  ["/%EF%BD%88eaders", "kept; app 404 (fullwidth h is not h)"],
  ["/headers%E2%80%8B", "kept; app 404"],
  ["/headers/%2e", "normalized to /headers/: app 404"],
  ["/headers/%2e%2e/headers", DENIED],
  ["/anything/../headers", DENIED],
  ["/anything/%2e%2e/headers", DENIED],
  ["/anything/..%2fheaders", "kept: app's /anything answers (not /headers)"],
];

/** Further targets that are not a path of origin form. */
const OTHER_TARGETS: [string, string, string][] = [
  ["abs-form", "http://httpbin.foo:8000/headers", "absolute form: path /headers → 403"],
  [
    "abs-form-other-host",
    "http://evil.example/headers",
    "absolute form: its authority is the Host; path → 403",
  ],
  ["no-slash", "headers", "400: not origin form"],
  ["asterisk", "*", "400 for GET (OPTIONS only)"],
];

/** `s` with control and non-ASCII bytes as `\xNN`. */
function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

const pathCase = (id: string, target: string, envoy: string): HostileCase => ({
  id,
  group: "path",
  what: `GET ${printable(target)}`,
  envoy,
  bytes: (c) => get(c, target),
  never: HEADERS_BODY,
  refuse: envoyRefuses(envoy),
});

const methodCase = (id: string, method: string, envoy: string, path = "/anything"): HostileCase => ({
  id,
  group: "method",
  what: `${printable(method)} ${path}`,
  envoy,
  bytes: (c) => get(c, path, method),
  never: new RegExp(`${DELETE_REACHED.source}|${HEADERS_BODY.source}`),
  refuse: envoyRefuses(envoy),
});

const KIB = 1024;

/** The path, method and oversized-head cases, and the controls. */
export const TARGET_CASES: HostileCase[] = [
  {
    id: "control-get",
    group: "control",
    what: "GET /anything (must be 200)",
    envoy: "200",
    bytes: (c) => get(c, "/anything"),
    want: [200],
  },
  {
    id: "control-log",
    group: "control",
    what: "GET of an undenied marker (must be 200 and in the app's access log)",
    envoy: "200",
    bytes: (c) => get(c, c.free),
    want: [200],
    logged: true,
  },
  {
    id: "control-chunked",
    group: "control",
    what: "POST /anything, a valid chunked body (must be 200)",
    envoy: "200",
    bytes: (c) =>
      `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
      `5\r\nhello\r\n0\r\n\r\n`,
    want: [200],
  },
  {
    id: "control-headers",
    group: "control",
    what: "GET /headers (the DENY: must be 403)",
    envoy: "403",
    bytes: (c) => get(c, "/headers"),
    want: [403],
    never: HEADERS_BODY,
  },
  {
    id: "control-delete",
    group: "control",
    what: "DELETE /anything (the DENY: must be 403)",
    envoy: "403",
    bytes: (c) => get(c, "/anything", "DELETE"),
    want: [403],
    never: DELETE_REACHED,
  },
  ...PATHS.map(([target, envoy], i) => pathCase(`path-${String(i + 1).padStart(2, "0")}`, target, envoy)),
  ...OTHER_TARGETS.map(([id, target, envoy]) => pathCase(id, target, envoy)),
  methodCase("method-lower", "delete", "400 (wrong-case standard method)"),
  methodCase("method-title", "Delete", "400 (wrong-case standard method)"),
  methodCase("method-mixed", "dElEtE", "400 (wrong-case standard method)"),
  methodCase("method-get-title", "Get", "400 (wrong-case standard method)", "/headers"),
  methodCase("method-get-lower", "get", "400 (wrong-case standard method)", "/headers"),
  methodCase("method-prefix", "DELET", "extension method, matched case-sensitively: app 405"),
  methodCase("method-suffix", "DELETEX", "extension method: app 405"),
  methodCase("method-space", "DELETE ", "400: two spaces in the request line"),
  methodCase("method-tab", "DELETE\t", "400: tab as a separator"),
  {
    id: "big-header-line",
    group: "oversized",
    what: "a 100 KiB header line",
    envoy: "431 (max_request_headers_kb 60)",
    bytes: (c) => `GET /headers HTTP/1.1\r\nHost: ${c.host}\r\nX-Big: ${"a".repeat(100 * KIB)}\r\n\r\n`,
    never: HEADERS_BODY,
    refuse: true,
  },
  {
    id: "many-headers",
    group: "oversized",
    what: "1,000 headers",
    envoy: "431 (max_request_headers_count 100)",
    bytes: (c) => {
      const fields = Array.from({ length: 1000 }, (_, i) => `X-H${i}: v\r\n`).join("");
      return `GET /headers HTTP/1.1\r\nHost: ${c.host}\r\n${fields}\r\n`;
    },
    never: HEADERS_BODY,
    refuse: true,
  },
  {
    id: "big-request-line",
    group: "oversized",
    what: "a 100 KiB request line",
    envoy: "431 (the request line counts in the 60 KiB head)",
    bytes: (c) => `GET /headers?${"a".repeat(100 * KIB)} HTTP/1.1\r\nHost: ${c.host}\r\n\r\n`,
    never: HEADERS_BODY,
    refuse: true,
  },
  {
    id: "big-head-bytes",
    group: "oversized",
    what: "1 MiB of header bytes without an end",
    envoy: "431",
    bytes: (c) => `GET /headers HTTP/1.1\r\nHost: ${c.host}\r\n${"X-A: b\r\n".repeat(128 * KIB)}`,
    never: HEADERS_BODY,
    refuse: true,
  },
];
