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
import { COLON, CR, FIELD_VALUE, HT, latin1, LF, SP, TARGET, TOKEN } from "./chars.ts";
import { wrongCaseMethod } from "./method.ts";
import {
  EMPTY,
  EXPECT_NONE,
  HttpError,
  HttpHead,
  M_CONNECT,
  M_GET,
  M_HEAD,
  M_OPTIONS,
  M_OTHER,
  REQUEST,
  RESPONSE,
} from "./http_head.ts";
import { applyFraming, isAlpha, kindOf, MAX_NOMINATED } from "./head_framing.ts";

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
  /** The head in {@link head} was parsed by the reader that hands its bytes on ({@link handOver}). */
  #handedOver = false;
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
    this.#handedOver = false;
  }

  /**
   * Marks the head just parsed (a {@link feed} returned its end) as handed over: the next feed, given
   * that head's bytes by the reader that parsed them, returns their length at once instead of parsing
   * them again; {@link head} stays as it is. The outbound listener reads and routes each request head
   * before its session takes it, on the session's own parser.
   */
  handOver(): void {
    this.#handedOver = true;
  }

  /**
   * Feeds the next chunk. Returns the index in `chunk` just after the head when the head is
   * complete (the rest of the chunk is body or the next message), or -1 when it needs more.
   *
   * @throws {HttpError} malformed (400; 502 for a response), too large (431), unsupported (501, 505)
   */
  feed(chunk: Uint8Array): number {
    if (this.#handedOver) {
      this.#handedOver = false;
      return chunk.length;
    }
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
    applyFraming(this.head, this.#kind === REQUEST, this.#nominated);
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
