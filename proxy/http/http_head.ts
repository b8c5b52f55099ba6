/**
 * A parsed HTTP/1.1 head as the data path reads it: offsets into the bytes it arrived in (no
 * strings are made), the kind of each header field, and the framing and connection facts the
 * parser found; the parse error with the status it is answered with. The parser (head.ts) fills it;
 * the encoder, the filters and the session read it.
 *
 * @module
 */
import { equalsLower, latin1 } from "./chars.ts";

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

export const EMPTY = new Uint8Array(0);

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
