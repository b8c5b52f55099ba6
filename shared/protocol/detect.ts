/**
 * First-bytes protocol detection, as Envoy's listener filters do it for Istio's automatic protocol
 * detection: `http_inspector` (an HTTP/1.x request line, or the HTTP/2 client connection preface)
 * and `tls_inspector` (a TLS handshake record carrying a ClientHello).
 *
 * @module
 */

/** What the first bytes of a connection are, or `more` while they are too few to tell. */
export type DetectedProtocol = "http1" | "http2" | "tls" | "tcp" | "more";

/** The HTTP/2 client connection preface (RFC 9113 section 3.4). */
const H2_PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * The most bytes {@link detectProtocol} looks at: a request line not complete within them is not
 * taken as HTTP (Envoy's http_inspector reads at most 64 KiB; Istio's request-line limit is lower
 * in practice, and a caller must stop waiting somewhere).
 */
export const DETECT_MAX_BYTES = 65_536;

const SP = 0x20;

/** RFC 9110 tchar: the characters of a method token. */
function isTchar(b: number): boolean {
  if (b >= 0x30 && b <= 0x39) return true; // DIGIT
  if ((b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) return true; // ALPHA
  return "!#$%&'*+-.^_`|~".includes(String.fromCharCode(b));
}

/** Compares `bytes` with `expected` as far as both go: "match", "prefix" (bytes shorter) or "no". */
function against(bytes: Uint8Array, at: number, expected: Uint8Array): "match" | "prefix" | "no" {
  const n = Math.min(bytes.length - at, expected.length);
  for (let i = 0; i < n; i++) if (bytes[at + i] !== expected[i]) return "no";
  return n === expected.length ? "match" : "prefix";
}

const VERSIONS = [new TextEncoder().encode("HTTP/1.1\r\n"), new TextEncoder().encode("HTTP/1.0\r\n")];

/**
 * An HTTP/1.x request line: `method SP request-target SP HTTP/1.0|HTTP/1.1 CRLF`, with a token
 * method (RFC 9110), a target of visible characters, and one space between the parts, as
 * http_inspector's parser accepts it. "more" while the bytes are a prefix of such a line.
 */
function http1(bytes: Uint8Array): "http1" | "more" | "no" {
  let i = 0;
  while (i < bytes.length && isTchar(bytes[i])) i++;
  if (i === bytes.length) return "more";
  if (i === 0 || bytes[i] !== SP) return "no";
  i++;
  const targetStart = i;
  while (i < bytes.length && bytes[i] > SP && bytes[i] < 0x7f) i++;
  if (i === bytes.length) return "more";
  if (i === targetStart || bytes[i] !== SP) return "no";
  i++;
  let verdict: "match" | "prefix" | "no" = "no";
  for (const v of VERSIONS) {
    const r = against(bytes, i, v);
    if (r === "match") return "http1";
    if (r === "prefix") verdict = "prefix";
  }
  return verdict === "prefix" ? "more" : "no";
}

/**
 * A TLS record carrying a ClientHello, as tls_inspector reads it: content type 22 (handshake),
 * record version major 3 with minor at most 4, a non-zero length, then handshake type 1.
 */
function tls(bytes: Uint8Array): "tls" | "more" | "no" {
  if (bytes[0] !== 0x16) return "no";
  if (bytes.length < 2) return "more";
  if (bytes[1] !== 0x03) return "no";
  if (bytes.length < 3) return "more";
  if (bytes[2] > 0x04) return "no";
  if (bytes.length < 5) return "more";
  if (bytes[3] === 0 && bytes[4] === 0) return "no";
  if (bytes.length < 6) return "more";
  return bytes[5] === 0x01 ? "tls" : "no";
}

/**
 * The protocol the first bytes of a connection speak: `http2` for the full 24-byte client preface
 * `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`; `http1` for a complete HTTP/1.0 or HTTP/1.1 request line; `tls`
 * for a TLS handshake record starting a ClientHello; `more` while `bytes` is a prefix of something
 * still possible (including no bytes) and shorter than {@link DETECT_MAX_BYTES}; `tcp` otherwise.
 * Pure; `bytes` is every byte received so far, from the first. Source: Envoy's http_inspector and
 * tls_inspector listener filters, Istio's "Protocol Selection" (automatic detection).
 */
export function detectProtocol(bytes: Uint8Array): DetectedProtocol {
  if (bytes.length === 0) return "more";
  const h2 = against(bytes, 0, H2_PREFACE);
  if (h2 === "match") return "http2";
  const t = tls(bytes);
  if (t !== "no") return t;
  const h1 = http1(bytes);
  if (h1 === "http1") return "http1";
  if ((h1 === "more" || h2 === "prefix") && bytes.length < DETECT_MAX_BYTES) return "more";
  return "tcp";
}
