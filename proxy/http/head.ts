/**
 * The incremental HTTP/1.1 head parser of the data path: request heads from downstream clients and
 * response heads from the application. It finds the end of the head (the first empty line) across
 * reads, then parses the head in place from the Uint8Array it arrived in: no strings are made for
 * the method, target or headers; the result is offsets into that buffer (see {@link HttpHead}).
 *
 * Strict where laxness lets a proxy and a server disagree about message boundaries (RFC 9112
 * sections 2.2, 5, 6.1 and 6.3, and what Envoy's codecs reject): CRLF line ends only (a bare CR or
 * LF is an error), no obsolete line folding, no whitespace between a header name and its colon,
 * Content-Length a list of identical decimal values, Transfer-Encoding not with Content-Length and
 * `chunked` last and only once. Limits as Envoy's defaults: 60 KiB of head (`max_request_headers_kb`)
 * and 100 header fields (`max_headers_count`), both answered with 431.
 *
 * @module
 */
import {
  COLON,
  COMMA,
  CR,
  equalsLower,
  FIELD_VALUE,
  HT,
  latin1,
  LF,
  SEMI,
  SP,
  TARGET,
  TOKEN,
} from "./chars.ts";
import { wrongCaseMethod } from "./method.ts";

/** A parse error, with the status a server answers it with (400, 431, 501, 505; 502 for responses). */
export class HttpError extends Error {
  /** The HTTP status for the local reply. */
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "HttpError";
    this.status = status;
  }
}

/** Size limits of a head. */
export interface HeadLimits {
  /** Bytes of the request or status line plus all header lines and the empty line. Default 60 KiB. */
  maxHeadBytes: number;
  /** Header fields. Default 100. */
  maxHeaders: number;
}

/** Envoy's defaults: `max_request_headers_kb: 60`, `max_headers_count: 100`. */
export const DEFAULT_HEAD_LIMITS: Readonly<HeadLimits> = Object.freeze({
  maxHeadBytes: 60 * 1024,
  maxHeaders: 100,
});

/** Header kinds the codec acts on; every other header is {@link H_OTHER}. */
export const H_OTHER = 0;
export const H_CONTENT_LENGTH = 1;
export const H_TRANSFER_ENCODING = 2;
export const H_CONNECTION = 3;
export const H_UPGRADE = 4;
export const H_HOST = 5;
export const H_XFCC = 6;
export const H_KEEP_ALIVE = 7;
export const H_PROXY_CONNECTION = 8;
export const H_TE = 9;
export const H_EXPECT = 10;
export const H_HTTP2_SETTINGS = 11;

/** Methods the codec treats specially; every other token is {@link M_OTHER}. */
export const M_OTHER = 0;
export const M_GET = 1;
export const M_HEAD = 2;
export const M_CONNECT = 3;
export const M_OPTIONS = 4;

/** `Expect` values. */
export const EXPECT_NONE = 0;
export const EXPECT_CONTINUE = 1;
export const EXPECT_OTHER = 2;

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
const EMPTY = new Uint8Array(0);
/** At most this many header names nominated by `Connection` (beyond close, keep-alive, upgrade). */
const MAX_NOMINATED = 16;

/**
 * One parsed head: offsets into {@link HttpHead.buf}, valid until the parser is fed again. The
 * object is reused for every message of a connection.
 */
export class HttpHead {
  /** The bytes the head was parsed from; the head is `buf[start, end)`, the empty line included. */
  buf: Uint8Array = EMPTY;
  start = 0;
  end = 0;
  /** Index after the CRLF of the request or status line. */
  lineEnd = 0;
  /**
   * The head lies in the parser's own buffer (it arrived in several chunks), which the next message
   * overwrites: copy it rather than forward a view of it.
   */
  shared = false;
  /** HTTP minor version: 0 or 1 (the major version is always 1). */
  minor = 1;
  /** Request: method token `buf[start, methodEnd)` and its kind (M_*). */
  methodEnd = 0;
  method = M_OTHER;
  /** Request: target `buf[targetStart, targetEnd)`. */
  targetStart = 0;
  targetEnd = 0;
  /** Response: status code, and where the code starts (what follows `HTTP/1.x `). */
  status = 0;
  statusStart = 0;
  /** Number of header fields. */
  count = 0;
  /** Per field: nameStart, nameEnd, valueStart, valueEnd (value without surrounding whitespace). */
  readonly fields: Int32Array;
  /** Per field: its kind (H_*). */
  readonly kinds: Uint8Array;
  /** Per field: 1 when hop-by-hop (not forwarded as is): Connection, Keep-Alive, nominated, ... */
  readonly drop: Uint8Array;
  /** Declared body length, or -1 when there is no Content-Length. */
  contentLength = -1;
  /** Content-Length was a list or repeated: forward one canonical header instead of the originals. */
  contentLengthRewrite = false;
  /** Transfer-Encoding present (requests: it is exactly `chunked`). */
  hasTransferEncoding = false;
  /** Transfer-Encoding ends with `chunked`. */
  chunked = false;
  /** The connection may carry another message after this one (version and Connection tokens). */
  keepAlive = true;
  /** `Connection: upgrade` with an `Upgrade` header (h2c excluded). */
  upgrade = false;
  /** Index of the Upgrade field, or -1. */
  upgradeField = -1;
  /** EXPECT_NONE, EXPECT_CONTINUE or EXPECT_OTHER. */
  expect = EXPECT_NONE;
  /** Number of X-Forwarded-Client-Cert fields. */
  xfccCount = 0;
  /** Number of Host fields. */
  hostCount = 0;

  constructor(maxHeaders: number) {
    this.fields = new Int32Array(maxHeaders * 4);
    this.kinds = new Uint8Array(maxHeaders);
    this.drop = new Uint8Array(maxHeaders);
  }

  /** The method as a string (logs, tests). */
  methodText(): string {
    return latin1(this.buf, this.start, this.methodEnd);
  }

  /** The request target as a string (logs, tests). */
  targetText(): string {
    return latin1(this.buf, this.targetStart, this.targetEnd);
  }

  /** Name of field `i`, as received. */
  name(i: number): string {
    return latin1(this.buf, this.fields[i * 4], this.fields[i * 4 + 1]);
  }

  /** Value of field `i`, without surrounding whitespace. */
  value(i: number): string {
    return latin1(this.buf, this.fields[i * 4 + 2], this.fields[i * 4 + 3]);
  }

  /** The first value of a header by case-insensitive name, or undefined (tests, rare paths). */
  get(name: string): string | undefined {
    const lower = new TextEncoder().encode(name.toLowerCase());
    for (let i = 0; i < this.count; i++) {
      if (equalsLower(this.buf, this.fields[i * 4], this.fields[i * 4 + 1], lower)) return this.value(i);
    }
    return undefined;
  }
}

/** Request or response parser. */
export const REQUEST = 0;
export const RESPONSE = 1;

/**
 * Parses one head at a time, fed with the chunks of a connection. Reuse it for every message: call
 * {@link reset} before the next one.
 */
export class HeadParser {
  /** The result, valid after {@link feed} returned an index, until the next feed or reset. */
  readonly head: HttpHead;
  readonly #kind: number;
  readonly #maxBytes: number;
  readonly #maxHeaders: number;
  /** The status of a parse error: 400 for requests, 502 for responses. */
  readonly #bad: number;
  /** Accumulates a head that spans chunks; grown on demand up to the limit. */
  #acc: Uint8Array = EMPTY;
  #accLen = 0;
  /** Leading CR/LF skipped before this message (RFC 9112 2.2). */
  #skipped = 0;
  #started = false;
  /** Request: bytes of the method validated so far (-1 once the space after it was seen). */
  #methodSeen = 0;
  readonly #nominated = new Int32Array(MAX_NOMINATED * 2);

  constructor(kind: typeof REQUEST | typeof RESPONSE, limits: HeadLimits = DEFAULT_HEAD_LIMITS) {
    this.#kind = kind;
    this.#maxBytes = limits.maxHeadBytes;
    this.#maxHeaders = limits.maxHeaders;
    this.#bad = kind === REQUEST ? 400 : 502;
    this.head = new HttpHead(limits.maxHeaders);
  }

  /** Whether any byte of the current message (other than leading empty lines) has been fed. */
  get started(): boolean {
    return this.#started;
  }

  /** Prepares for the next message. */
  reset(): void {
    this.#accLen = 0;
    this.#skipped = 0;
    this.#started = false;
    this.#methodSeen = 0;
  }

  /**
   * Feeds the next chunk. Returns the index in `chunk` just after the head when the head is
   * complete (the rest of the chunk is body or the next message), or -1 when it needs more.
   *
   * @throws {HttpError} malformed (400; 502 for a response), too large (431), unsupported (501, 505)
   */
  feed(chunk: Uint8Array): number {
    const n = chunk.length;
    let p = 0;
    if (!this.#started) {
      while (p < n && (chunk[p] === CR || chunk[p] === LF)) p++;
      this.#skipped += p;
      if (this.#skipped > 64) throw new HttpError(this.#bad, "too many empty lines before the message");
      if (p === n) return -1;
      this.#started = true;
    }
    if (this.#accLen === 0) {
      // Fast path: the whole head in one chunk, parsed where it lies.
      const end = findHeadEnd(chunk, p, n);
      if (end >= 0) {
        if (end - p > this.#maxBytes) throw tooLarge();
        this.#parse(chunk, p, end);
        this.head.shared = false;
        return end;
      }
      if (this.#kind === REQUEST) this.#checkMethod(chunk, p, n);
      if (n - p > this.#maxBytes) throw tooLarge();
      this.#append(chunk, p, n);
      return -1;
    }
    const before = this.#accLen;
    const take = Math.min(n - p, this.#maxBytes + 1 - before);
    this.#append(chunk, p, p + take);
    const acc = this.#acc;
    const end = findHeadEnd(acc, before > 3 ? before - 3 : 0, this.#accLen);
    if (end < 0) {
      if (this.#accLen > this.#maxBytes) throw tooLarge();
      if (this.#kind === REQUEST) this.#checkMethod(acc, before, this.#accLen);
      return -1;
    }
    if (end > this.#maxBytes) throw tooLarge();
    this.#parse(acc, 0, end);
    this.head.shared = true;
    return p + (end - before);
  }

  #append(chunk: Uint8Array, s: number, e: number): void {
    const need = this.#accLen + (e - s);
    if (need > this.#acc.length) {
      let size = Math.max(4096, this.#acc.length * 2);
      while (size < need) size *= 2;
      const grown = new Uint8Array(Math.min(size, this.#maxBytes + 1));
      grown.set(this.#acc.subarray(0, this.#accLen));
      this.#acc = grown;
    }
    this.#acc.set(chunk.subarray(s, e), this.#accLen);
    this.#accLen = need;
  }

  /** Rejects a request whose first bytes cannot start a method (a TLS ClientHello, binary). */
  #checkMethod(b: Uint8Array, s: number, e: number): void {
    if (this.#methodSeen < 0) return;
    for (let i = s; i < e; i++) {
      const c = b[i];
      if (TOKEN[c] === 1) {
        this.#methodSeen++;
        continue;
      }
      if (c === SP && this.#methodSeen > 0) {
        this.#methodSeen = -1;
        return;
      }
      throw new HttpError(400, "invalid character in method");
    }
  }

  #parse(b: Uint8Array, s: number, e: number): void {
    const h = this.head;
    h.buf = b;
    h.start = s;
    h.end = e;
    h.contentLength = -1;
    h.contentLengthRewrite = false;
    h.hasTransferEncoding = false;
    h.chunked = false;
    h.upgrade = false;
    h.upgradeField = -1;
    h.expect = EXPECT_NONE;
    h.xfccCount = 0;
    h.hostCount = 0;
    h.method = M_OTHER;
    h.status = 0;
    const i = this.#kind === REQUEST ? this.#requestLine(b, s) : this.#statusLine(b, s);
    h.lineEnd = i;
    this.#fields(b, i, e);
    this.#semantics();
  }

  #requestLine(b: Uint8Array, s: number): number {
    const h = this.head;
    let i = s;
    while (TOKEN[b[i]] === 1) i++;
    if (i === s || b[i] !== SP) throw new HttpError(400, "invalid method");
    h.methodEnd = i;
    h.method = methodKind(b, s, i);
    const wrongCase = h.method === M_OTHER ? wrongCaseMethod(b, s, i) : null;
    if (wrongCase !== null) throw new HttpError(400, wrongCase);
    const ts = ++i;
    while (TARGET[b[i]] === 1) i++;
    if (i === ts || b[i] !== SP) {
      // `#` is not in TARGET: Envoy rejects a fragment (CVE-2021-32779, http_reject_path_with_fragment).
      throw new HttpError(
        400,
        b[i] === 0x23 ? "request target with a fragment (#)" : "invalid request target",
      );
    }
    h.targetStart = ts;
    h.targetEnd = i;
    i++;
    i = this.#version(b, i, 400);
    if (b[i] !== CR || b[i + 1] !== LF) throw new HttpError(400, "invalid request line");
    checkTargetForm(b, ts, h.targetEnd, h.method);
    return i + 2;
  }

  #statusLine(b: Uint8Array, s: number): number {
    const h = this.head;
    let i = this.#version(b, s, 502);
    if (b[i] !== SP) throw new HttpError(502, "invalid status line");
    i++;
    h.statusStart = i;
    const d0 = b[i] - 0x30, d1 = b[i + 1] - 0x30, d2 = b[i + 2] - 0x30;
    if (!(d0 >= 1 && d0 <= 9 && d1 >= 0 && d1 <= 9 && d2 >= 0 && d2 <= 9)) {
      throw new HttpError(502, "invalid status code");
    }
    h.status = d0 * 100 + d1 * 10 + d2;
    i += 3;
    if (b[i] === SP) {
      i++;
      while (FIELD_VALUE[b[i]] === 1) i++;
    }
    if (b[i] !== CR || b[i + 1] !== LF) throw new HttpError(502, "invalid status line");
    return i + 2;
  }

  /** `HTTP/1.0` or `HTTP/1.1` at `i`; returns the index after it. */
  #version(b: Uint8Array, i: number, bad: number): number {
    if (
      b[i] !== 0x48 || b[i + 1] !== 0x54 || b[i + 2] !== 0x54 || b[i + 3] !== 0x50 || b[i + 4] !== 0x2f ||
      b[i + 6] !== 0x2e
    ) throw new HttpError(bad, "invalid HTTP version");
    const major = b[i + 5] - 0x30, minor = b[i + 7] - 0x30;
    if (!(major >= 0 && major <= 9 && minor >= 0 && minor <= 9)) {
      throw new HttpError(bad, "invalid HTTP version");
    }
    if (major !== 1 || minor > 1) {
      throw new HttpError(bad === 400 ? 505 : 502, `HTTP/${major}.${minor} is not supported`);
    }
    this.head.minor = minor;
    return i + 8;
  }

  #fields(b: Uint8Array, i: number, e: number): void {
    const h = this.head;
    const f = h.fields, kinds = h.kinds, drop = h.drop;
    const max = this.#maxHeaders;
    let n = 0;
    for (;;) {
      const c = b[i];
      if (c === CR) {
        if (b[i + 1] === LF && i + 2 === e) break;
        throw new HttpError(this.#bad, "bare CR in header section");
      }
      if (c === SP || c === HT) throw new HttpError(this.#bad, "obsolete line folding");
      const ns = i;
      while (TOKEN[b[i]] === 1) i++;
      if (b[i] !== COLON) {
        if (b[i] === LF) throw new HttpError(this.#bad, "bare LF line ending");
        if (b[i] === SP || b[i] === HT) throw new HttpError(this.#bad, "whitespace after header name");
        throw new HttpError(this.#bad, i === ns ? "empty header name" : "invalid character in header name");
      }
      if (i === ns) throw new HttpError(this.#bad, "empty header name");
      const ne = i++;
      while (b[i] === SP || b[i] === HT) i++;
      const vs = i;
      while (FIELD_VALUE[b[i]] === 1) i++;
      if (b[i] !== CR || b[i + 1] !== LF) {
        throw new HttpError(
          this.#bad,
          b[i] === LF ? "bare LF line ending" : "invalid character in header value",
        );
      }
      let ve = i;
      while (ve > vs && (b[ve - 1] === SP || b[ve - 1] === HT)) ve--;
      i += 2;
      if (n === max) throw new HttpError(this.#kind === REQUEST ? 431 : 502, "too many header fields");
      const k = n * 4;
      f[k] = ns;
      f[k + 1] = ne;
      f[k + 2] = vs;
      f[k + 3] = ve;
      kinds[n] = kindOf(b, ns, ne);
      drop[n] = 0;
      n++;
    }
    h.count = n;
  }

  /** Framing and connection management from the classified fields. */
  #semantics(): void {
    const h = this.head;
    const b = h.buf, f = h.fields, kinds = h.kinds, drop = h.drop;
    const isRequest = this.#kind === REQUEST;
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
            throw new HttpError(this.#bad, v === -2 ? "Content-Length too large" : "invalid Content-Length");
          }
          if (clFields > 0 && v !== h.contentLength) {
            throw new HttpError(this.#bad, "conflicting Content-Length values");
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
              throw new HttpError(this.#bad, "invalid Transfer-Encoding");
            }
            // Transfer-coding parameters (`;q=...`): not allowed for chunked, passed on for others.
            const hasParams = i < ve && b[i] === SEMI;
            while (i < ve && b[i] !== COMMA) i++;
            if (ts !== te) {
              teCodings++;
              teLastChunked = equalsLower(b, ts, te, V_CHUNKED) && !hasParams;
              if (teLastChunked) teChunkedCount++;
            } else if (i < ve && !allWhitespace(b, ts, i)) {
              throw new HttpError(this.#bad, "invalid Transfer-Encoding");
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
            if (i < ve && b[i] !== COMMA) throw new HttpError(this.#bad, "invalid Connection header");
            i++;
            if (ts === te) continue;
            if (equalsLower(b, ts, te, V_CLOSE)) close = true;
            else if (equalsLower(b, ts, te, V_KEEP_ALIVE)) keepAliveToken = true;
            else if (equalsLower(b, ts, te, V_UPGRADE)) upgradeToken = true;
            else if (nominated < MAX_NOMINATED) {
              this.#nominated[nominated * 2] = ts;
              this.#nominated[nominated * 2 + 1] = te;
              nominated++;
            } else throw new HttpError(this.#bad, "too many Connection options");
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
      const ts = this.#nominated[k * 2], te = this.#nominated[k * 2 + 1];
      for (let j = 0; j < h.count; j++) {
        if (sameNameIgnoringCase(b, f[j * 4], f[j * 4 + 1], ts, te)) {
          if (kinds[j] === H_HOST || kinds[j] === H_CONTENT_LENGTH || kinds[j] === H_TRANSFER_ENCODING) {
            throw new HttpError(this.#bad, "Connection nominates a framing or Host header");
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
}

function tooLarge(): HttpError {
  return new HttpError(431, "head larger than the limit");
}

/**
 * Index just after the first empty line at or after `from` (`\n\n`, `\n\r\n`), or -1. A bare LF is
 * accepted here only to find the end; the parser then rejects it.
 */
export function findHeadEnd(b: Uint8Array, from: number, end: number): number {
  // indexOf (memchr) when the buffer ends at `end`; a bounded loop otherwise, so that a head that
  // arrives byte by byte is not scanned to the end of the accumulation buffer each time.
  const native = end === b.length;
  let i = from;
  for (;;) {
    if (native) i = b.indexOf(LF, i);
    else {
      while (i < end && b[i] !== LF) i++;
      if (i === end) i = -1;
    }
    if (i < 0 || i + 1 >= end) return -1;
    const c = b[i + 1];
    if (c === LF) return i + 2;
    if (c === CR) {
      if (i + 2 >= end) return -1;
      if (b[i + 2] === LF) return i + 3;
    }
    i++;
  }
}

function methodKind(b: Uint8Array, s: number, e: number): number {
  const n = e - s;
  if (n === 3 && b[s] === 0x47 && b[s + 1] === 0x45 && b[s + 2] === 0x54) return M_GET;
  if (n === 4 && b[s] === 0x48 && b[s + 1] === 0x45 && b[s + 2] === 0x41 && b[s + 3] === 0x44) return M_HEAD;
  if (n === 7) {
    const t = latin1(b, s, e);
    if (t === "CONNECT") return M_CONNECT;
    if (t === "OPTIONS") return M_OPTIONS;
  }
  return M_OTHER;
}

/** origin-form (`/...`), absolute-form (`scheme://...`), `*` for OPTIONS, authority-form for CONNECT. */
function checkTargetForm(b: Uint8Array, s: number, e: number, method: number): void {
  const c = b[s];
  if (method === M_CONNECT) {
    // authority-form: host:port, no path.
    for (let i = s; i < e; i++) {
      if (b[i] === 0x2f || b[i] === 0x3f || b[i] === 0x23) {
        throw new HttpError(400, "invalid CONNECT target");
      }
    }
    return;
  }
  if (c === 0x2f) return;
  if (c === 0x2a) {
    if (e - s === 1 && method === M_OPTIONS) return;
    throw new HttpError(400, "invalid request target");
  }
  // absolute-form: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) "://"
  let i = s;
  if (!isAlpha(c)) throw new HttpError(400, "invalid request target");
  while (
    i < e &&
    (isAlpha(b[i]) || (b[i] >= 0x30 && b[i] <= 0x39) || b[i] === 0x2b || b[i] === 0x2d || b[i] === 0x2e)
  ) {
    i++;
  }
  if (e - i < 3 || b[i] !== COLON || b[i + 1] !== 0x2f || b[i + 2] !== 0x2f) {
    throw new HttpError(400, "invalid request target");
  }
}

function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

function kindOf(b: Uint8Array, s: number, e: number): number {
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
