/**
 * The framing and connection-management rules of an HTTP/1.1 head (RFC 9112 sections 6.1 and 6.3,
 * RFC 9110 section 7.6.1, and what Envoy's codecs reject): which header fields are hop-by-hop,
 * Content-Length as a list of identical decimal values, Transfer-Encoding with `chunked` last and
 * only once and never with Content-Length in a request, the options `Connection` nominates, and the
 * classification of the header names these rules read.
 *
 * @module
 */
import { COMMA, equalsLower, HT, SEMI, SP, TOKEN } from "./chars.ts";
import {
  EXPECT_CONTINUE,
  EXPECT_OTHER,
  H_CONNECTION,
  H_CONTENT_LENGTH,
  H_EXPECT,
  H_HOST,
  H_HTTP2_SETTINGS,
  H_KEEP_ALIVE,
  H_OTHER,
  H_PROXY_CONNECTION,
  H_TE,
  H_TRANSFER_ENCODING,
  H_UPGRADE,
  H_XFCC,
  HttpError,
  type HttpHead,
} from "./http_head.ts";

const N_CONTENT_LENGTH = new TextEncoder().encode("content-length");

const N_TRANSFER_ENCODING = new TextEncoder().encode("transfer-encoding");

const N_CONNECTION = new TextEncoder().encode("connection");

const N_UPGRADE = new TextEncoder().encode("upgrade");

const N_HOST = new TextEncoder().encode("host");

const N_XFCC = new TextEncoder().encode("x-forwarded-client-cert");

const N_KEEP_ALIVE = new TextEncoder().encode("keep-alive");

const N_PROXY_CONNECTION = new TextEncoder().encode("proxy-connection");

const N_TE = new TextEncoder().encode("te");

const N_EXPECT = new TextEncoder().encode("expect");

const N_HTTP2_SETTINGS = new TextEncoder().encode("http2-settings");

const V_CHUNKED = new TextEncoder().encode("chunked");

const V_CLOSE = new TextEncoder().encode("close");

const V_KEEP_ALIVE = N_KEEP_ALIVE;

const V_UPGRADE = N_UPGRADE;

const V_H2C = new TextEncoder().encode("h2c");

const V_TRAILERS = new TextEncoder().encode("trailers");

const V_100_CONTINUE = new TextEncoder().encode("100-continue");

/** At most this many header names nominated by `Connection` (beyond close, keep-alive, upgrade). */
export const MAX_NOMINATED = 16;

export function kindOf(b: Uint8Array, s: number, e: number): number {
  switch (e - s) {
    case 2:
      return equalsLower(b, s, e, N_TE) ? H_TE : H_OTHER;
    case 4:
      return equalsLower(b, s, e, N_HOST) ? H_HOST : H_OTHER;
    case 6:
      return equalsLower(b, s, e, N_EXPECT) ? H_EXPECT : H_OTHER;
    case 7:
      return equalsLower(b, s, e, N_UPGRADE) ? H_UPGRADE : H_OTHER;
    case 10:
      if (equalsLower(b, s, e, N_CONNECTION)) return H_CONNECTION;
      return equalsLower(b, s, e, N_KEEP_ALIVE) ? H_KEEP_ALIVE : H_OTHER;
    case 14:
      if (equalsLower(b, s, e, N_CONTENT_LENGTH)) return H_CONTENT_LENGTH;
      return equalsLower(b, s, e, N_HTTP2_SETTINGS) ? H_HTTP2_SETTINGS : H_OTHER;
    case 16:
      return equalsLower(b, s, e, N_PROXY_CONNECTION) ? H_PROXY_CONNECTION : H_OTHER;
    case 17:
      return equalsLower(b, s, e, N_TRANSFER_ENCODING) ? H_TRANSFER_ENCODING : H_OTHER;
    case 23:
      return equalsLower(b, s, e, N_XFCC) ? H_XFCC : H_OTHER;
  }
  return H_OTHER;
}

/**
 * Framing and connection management from the classified fields of a parsed head: Content-Length
 * (a list of identical values), Transfer-Encoding (`chunked` last and only once; with
 * Content-Length refused in requests, winning in responses), Connection tokens and the fields they
 * nominate, Upgrade, TE, Expect, Host and X-Forwarded-Client-Cert counts. Sets the head's framing
 * fields and marks hop-by-hop fields in `drop`.
 *
 * @param nominatedAt scratch space for the names `Connection` nominates: MAX_NOMINATED pairs of offsets
 * @throws {HttpError} 400 (502 for a response) when the framing is ambiguous or malformed, 501 for an
 *   unsupported transfer coding
 */
export function applyFraming(h: HttpHead, isRequest: boolean, nominatedAt: Int32Array): void {
  const b = h.buf, f = h.fields, kinds = h.kinds, drop = h.drop;
  const bad = isRequest ? 400 : 502;
  let close = false, keepAliveToken = false, upgradeToken = false;
  let nominated = 0;
  let clFields = 0, clSimple = true;
  let teCodings = 0, teChunkedCount = 0, teLastChunked = false;
  for (let j = 0; j < h.count; j++) {
    const kind = kinds[j];
    if (kind === H_OTHER) continue;
    const vs = f[j * 4 + 2], ve = f[j * 4 + 3];
    switch (kind) {
      case H_CONTENT_LENGTH: {
        const v = contentLengthOf(b, vs, ve);
        if (v < 0) {
          throw new HttpError(bad, v === -2 ? "Content-Length too large" : "invalid Content-Length");
        }
        if (clFields > 0 && v !== h.contentLength) {
          throw new HttpError(bad, "conflicting Content-Length values");
        }
        if (clFields > 0 || !isPlainDigits(b, vs, ve)) clSimple = false;
        h.contentLength = v;
        clFields++;
        break;
      }
      case H_TRANSFER_ENCODING: {
        h.hasTransferEncoding = true;
        // A list of codings, possibly over several fields; `chunked` must be last and only once.
        let i = vs;
        while (i <= ve) {
          while (i < ve && (b[i] === SP || b[i] === HT)) i++;
          const ts = i;
          while (i < ve && TOKEN[b[i]] === 1) i++;
          const te = i;
          while (i < ve && (b[i] === SP || b[i] === HT)) i++;
          if (i < ve && b[i] !== COMMA && b[i] !== SEMI) {
            throw new HttpError(bad, "invalid Transfer-Encoding");
          }
          // Transfer-coding parameters (`;q=...`): not allowed for chunked, passed on for others.
          const hasParams = i < ve && b[i] === SEMI;
          while (i < ve && b[i] !== COMMA) i++;
          if (ts !== te) {
            teCodings++;
            teLastChunked = equalsLower(b, ts, te, V_CHUNKED) && !hasParams;
            if (teLastChunked) teChunkedCount++;
          } else if (i < ve && !allWhitespace(b, ts, i)) {
            throw new HttpError(bad, "invalid Transfer-Encoding");
          }
          i++;
        }
        break;
      }
      case H_CONNECTION: {
        drop[j] = 1;
        let i = vs;
        while (i <= ve) {
          while (i < ve && (b[i] === SP || b[i] === HT)) i++;
          const ts = i;
          while (i < ve && TOKEN[b[i]] === 1) i++;
          const te = i;
          while (i < ve && (b[i] === SP || b[i] === HT)) i++;
          if (i < ve && b[i] !== COMMA) throw new HttpError(bad, "invalid Connection header");
          i++;
          if (ts === te) continue;
          if (equalsLower(b, ts, te, V_CLOSE)) close = true;
          else if (equalsLower(b, ts, te, V_KEEP_ALIVE)) keepAliveToken = true;
          else if (equalsLower(b, ts, te, V_UPGRADE)) upgradeToken = true;
          else if (nominated < MAX_NOMINATED) {
            nominatedAt[nominated * 2] = ts;
            nominatedAt[nominated * 2 + 1] = te;
            nominated++;
          } else throw new HttpError(bad, "too many Connection options");
        }
        break;
      }
      case H_UPGRADE:
        drop[j] = 1;
        if (h.upgradeField < 0) h.upgradeField = j;
        break;
      case H_HOST:
        h.hostCount++;
        break;
      case H_XFCC:
        h.xfccCount++;
        break;
      case H_KEEP_ALIVE:
      case H_PROXY_CONNECTION:
      case H_HTTP2_SETTINGS:
        drop[j] = 1;
        break;
      case H_TE:
        // Hop-by-hop; only `trailers` means something to the next hop (as Envoy keeps it).
        if (!equalsLower(b, vs, ve, V_TRAILERS)) drop[j] = 1;
        break;
      case H_EXPECT:
        // 100-continue is answered by the proxy itself (Envoy's default), so it is not forwarded.
        h.expect = equalsLower(b, vs, ve, V_100_CONTINUE) ? EXPECT_CONTINUE : EXPECT_OTHER;
        if (h.expect === EXPECT_CONTINUE) drop[j] = 1;
        break;
    }
  }
  for (let k = 0; k < nominated; k++) {
    const ts = nominatedAt[k * 2], te = nominatedAt[k * 2 + 1];
    for (let j = 0; j < h.count; j++) {
      if (sameNameIgnoringCase(b, f[j * 4], f[j * 4 + 1], ts, te)) {
        if (kinds[j] === H_HOST || kinds[j] === H_CONTENT_LENGTH || kinds[j] === H_TRANSFER_ENCODING) {
          throw new HttpError(bad, "Connection nominates a framing or Host header");
        }
        drop[j] = 1;
      }
    }
  }
  if (h.hasTransferEncoding) {
    if (isRequest) {
      if (h.minor === 0) throw new HttpError(400, "Transfer-Encoding in an HTTP/1.0 request");
      if (clFields > 0) throw new HttpError(400, "both Content-Length and Transfer-Encoding");
      if (teChunkedCount > 1 || (teChunkedCount === 1 && !teLastChunked) || teCodings === 0) {
        throw new HttpError(400, "invalid Transfer-Encoding");
      }
      if (teCodings !== 1 || !teLastChunked) {
        throw new HttpError(501, "unsupported transfer coding");
      }
      h.chunked = true;
    } else {
      if (teChunkedCount > 1) throw new HttpError(502, "invalid Transfer-Encoding");
      h.chunked = teLastChunked;
      if (clFields > 0) {
        // Transfer-Encoding wins (RFC 9112 6.3); the Content-Length is not forwarded.
        for (let j = 0; j < h.count; j++) if (kinds[j] === H_CONTENT_LENGTH) drop[j] = 1;
        h.contentLength = -1;
        clFields = 0;
      }
    }
  }
  if (clFields > 0 && !clSimple) {
    h.contentLengthRewrite = true;
    for (let j = 0; j < h.count; j++) if (kinds[j] === H_CONTENT_LENGTH) drop[j] = 1;
  }
  if (isRequest) {
    if (h.hostCount > 1) throw new HttpError(400, "more than one Host header");
    if (h.hostCount === 0 && h.minor === 1) throw new HttpError(400, "missing Host header");
  }
  h.keepAlive = !close && (h.minor === 1 || keepAliveToken);
  if (upgradeToken && h.upgradeField >= 0) {
    const j = h.upgradeField;
    h.upgrade = !equalsLower(b, f[j * 4 + 2], f[j * 4 + 3], V_H2C);
  }
}

/**
 * Content-Length: `1*DIGIT`, or a list of identical such values (RFC 9110 8.6). Returns the value,
 * -1 when malformed or the list members differ, -2 when above 2^53 - 1.
 */
function contentLengthOf(b: Uint8Array, s: number, e: number): number {
  let value = -1;
  let i = s;
  for (;;) {
    while (i < e && (b[i] === SP || b[i] === HT)) i++;
    const ds = i;
    let v = 0;
    while (i < e && b[i] >= 0x30 && b[i] <= 0x39) {
      v = v * 10 + (b[i] - 0x30);
      if (v > Number.MAX_SAFE_INTEGER) return -2;
      i++;
    }
    if (i === ds) return -1;
    if (value >= 0 && v !== value) return -1;
    value = v;
    while (i < e && (b[i] === SP || b[i] === HT)) i++;
    if (i === e) return value;
    if (b[i] !== COMMA) return -1;
    i++;
  }
}

/** Digits only, without leading zeros (else the forwarded value is rewritten canonically). */
function isPlainDigits(b: Uint8Array, s: number, e: number): boolean {
  if (e - s > 1 && b[s] === 0x30) return false;
  for (let i = s; i < e; i++) if (b[i] < 0x30 || b[i] > 0x39) return false;
  return e > s;
}

function allWhitespace(b: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (b[i] !== SP && b[i] !== HT) return false;
  return true;
}

function sameNameIgnoringCase(b: Uint8Array, s1: number, e1: number, s2: number, e2: number): boolean {
  if (e1 - s1 !== e2 - s2) return false;
  for (let k = 0; k < e1 - s1; k++) {
    const x = b[s1 + k], y = b[s2 + k];
    if (x !== y && !(isAlpha(x) && (x | 0x20) === (y | 0x20))) return false;
  }
  return true;
}

export function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
