/**
 * Byte classes of HTTP/1.1 (RFC 9110 section 5.6, RFC 9112) as 256-entry lookup tables, so that the
 * parsers test a byte with one indexed load. Shared by the head parser and the chunked decoder.
 *
 * @module
 */

/** `tchar`: the characters of a token (method, header name, transfer coding, chunk-ext name). */
export const TOKEN: Uint8Array = new Uint8Array(256);
/** `field-vchar / SP / HTAB / obs-text`: what a header value may contain. */
export const FIELD_VALUE: Uint8Array = new Uint8Array(256);
/**
 * Visible ASCII (0x21-0x7E) but `#`: what a request target may contain. A fragment is not part of a
 * request target (RFC 9112 section 3.2); Envoy answers it 400 (CVE-2021-32779).
 */
export const TARGET: Uint8Array = new Uint8Array(256);
/** `qdtext` of a quoted string: HTAB, SP, 0x21, 0x23-0x5B, 0x5D-0x7E, obs-text. */
export const QDTEXT: Uint8Array = new Uint8Array(256);
/** Hexadecimal digit value plus one (0 when not a hex digit). */
export const HEX: Uint8Array = new Uint8Array(256);

for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  TOKEN[c.charCodeAt(0)] = 1;
}
for (let c = 0; c < 256; c++) {
  FIELD_VALUE[c] = c === 0x09 || (c >= 0x20 && c !== 0x7f) ? 1 : 0;
  TARGET[c] = c > 0x20 && c < 0x7f && c !== 0x23 ? 1 : 0;
  QDTEXT[c] = c === 0x09 || c === 0x20 || c === 0x21 || (c >= 0x23 && c <= 0x5b) ||
      (c >= 0x5d && c <= 0x7e) || c >= 0x80
    ? 1
    : 0;
}
for (let d = 0; d < 10; d++) HEX[0x30 + d] = d + 1;
for (let d = 0; d < 6; d++) {
  HEX[0x41 + d] = d + 11;
  HEX[0x61 + d] = d + 11;
}

export const CR = 0x0d;
export const LF = 0x0a;
export const SP = 0x20;
export const HT = 0x09;
export const COLON = 0x3a;
export const SEMI = 0x3b;
export const COMMA = 0x2c;
export const EQUALS = 0x3d;
export const DQUOTE = 0x22;
export const BACKSLASH = 0x5c;

/** ASCII bytes of a string with only Latin-1 characters (header names and fixed texts). */
export function ascii(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0xff;
  return out;
}

/** `b[s, s + lower.length)` equals `lower` ignoring ASCII case; `lower` is lowercase letters, digits, `-`. */
export function equalsLower(b: Uint8Array, s: number, e: number, lower: Uint8Array): boolean {
  const n = lower.length;
  if (e - s !== n) return false;
  for (let k = 0; k < n; k++) {
    if ((b[s + k] | 0x20) !== lower[k]) return false;
  }
  return true;
}

/** Latin-1 text of `b[s, e)`: for logs, error messages and the rare header that needs a string. */
export function latin1(b: Uint8Array, s: number, e: number): string {
  let out = "";
  for (let i = s; i < e; i++) out += String.fromCharCode(b[i]);
  return out;
}
