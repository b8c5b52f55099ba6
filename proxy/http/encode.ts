/**
 * Heads as the proxy forwards them: the received bytes, minus hop-by-hop fields, plus the fields the
 * proxy adds (X-Forwarded-Client-Cert, its own Connection, a canonical Content-Length). When nothing
 * is dropped the received bytes are forwarded as they are (a view, no copy) and the additions follow
 * as a second buffer; otherwise the kept ranges are copied into one new buffer.
 *
 * @module
 */
import { ascii, CR, LF } from "./chars.ts";
import { H_CONTENT_LENGTH, H_HOST, H_TRANSFER_ENCODING, H_XFCC, HttpHead } from "./http_head.ts";

const CRLF = ascii("\r\n");
const HTTP11 = ascii("HTTP/1.1");
const HTTP11_SP = ascii("HTTP/1.1 ");
const XFCC_PREFIX = ascii("x-forwarded-client-cert: ");
const CONNECTION_UPGRADE = ascii("connection: upgrade\r\n");
const CONNECTION_CLOSE = ascii("connection: close\r\n");
const CONNECTION_KEEP_ALIVE = ascii("connection: keep-alive\r\n");
const TE_CHUNKED = ascii("transfer-encoding: chunked\r\n");
const CONTENT_LENGTH_PREFIX = ascii("content-length: ");
const HOST_PREFIX = ascii("host: ");

/**
 * Bytes of the current slab that {@link outBuffer} carves heads from. 8 KiB, not 64: a slab lives
 * until its last view is collected, so under load a 64 KiB slab was nearly always still held at a
 * scavenge and promoted, and its backing store (malloc) stayed until the next full GC: the client
 * proxy's malloc heap grew from 11 to 33-38 MiB during 20 s of wrk; 8 KiB keeps it flat
 * (../workers/README.md, "The malloc heap under load").
 */
const SLAB_SIZE = 8 * 1024;
let slab = new Uint8Array(SLAB_SIZE);
let slabUsed = 0;

/**
 * A new buffer of `n` bytes for bytes to send: up to 4 KiB a view of a shared 8 KiB slab (as node's
 * Buffer pool), so a forwarded head costs no allocation of its own (measured in README.md). A region
 * is handed out once and never reused, as a written chunk must not change until it is sent; a slab
 * lives until its last view is collected. Zero-filled, like `new Uint8Array(n)`.
 */
export function outBuffer(n: number): Uint8Array {
  if (n > 4096) return new Uint8Array(n);
  if (slabUsed + n > SLAB_SIZE) {
    slab = new Uint8Array(SLAB_SIZE);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + n);
  slabUsed = (slabUsed + n + 7) & ~7;
  return out;
}

/** Copies `src[s, e)` to `dst` at `o`; returns the index after it. */
function put(dst: Uint8Array, o: number, src: Uint8Array, s: number, e: number): number {
  const n = e - s;
  if (n < 32) {
    for (let k = 0; k < n; k++) dst[o + k] = src[s + k];
  } else {
    dst.set(src.subarray(s, e), o);
  }
  return o + n;
}

function putAll(dst: Uint8Array, o: number, src: Uint8Array): number {
  return put(dst, o, src, 0, src.length);
}

/** A head to send: one or two buffers (the second may be null). */
export interface HeadBytes {
  first: Uint8Array;
  second: Uint8Array | null;
}

/** What the request head sent to the application gets besides the received fields. */
export interface RequestHeadOptions {
  /**
   * The client certificate element to append to X-Forwarded-Client-Cert (mutual TLS), as bytes of
   * `By=...;Hash=...;...`; null strips any X-Forwarded-Client-Cert the client sent.
   */
  xfccElement: Uint8Array | null;
  /** Whether the request is forwarded as an upgrade (adds `connection: upgrade` and the Upgrade field). */
  upgrade: boolean;
  /** Host for an HTTP/1.0 request without one (the next hop speaks HTTP/1.1, which needs it). */
  defaultHost: Uint8Array;
  /** Complete header lines (`name: value\r\n`...) a request filter adds; null or absent: none. */
  extraFields?: Uint8Array | null;
  /** A request target replacing the received one (a normalized path); null or absent: as received. */
  target?: Uint8Array | null;
  /**
   * A Host value replacing every received Host field (an absolute-form target's authority, RFC 9112
   * section 3.2.2); null or absent: as received.
   */
  host?: Uint8Array | null;
}

/**
 * The request head for the application, always HTTP/1.1: hop-by-hop fields removed (Connection,
 * Keep-Alive, Proxy-Connection, TE other than `trailers`, HTTP2-Settings, fields nominated by
 * Connection, Upgrade unless upgrading), X-Forwarded-Client-Cert per {@link RequestHeadOptions}.
 */
export function encodeRequestHead(h: HttpHead, opts: RequestHeadOptions): HeadBytes {
  const b = h.buf, f = h.fields, drop = h.drop, kinds = h.kinds;
  let dropped = h.xfccCount > 0 || h.contentLengthRewrite;
  if (!dropped) {
    for (let j = 0; j < h.count; j++) {
      if (drop[j] === 1) {
        dropped = true;
        break;
      }
    }
  }
  const xfcc = opts.xfccElement;
  // Additions after the kept fields.
  let extra = 0;
  if (xfcc !== null) {
    extra += XFCC_PREFIX.length + xfcc.length + 2;
    if (h.xfccCount > 0) {
      for (let j = 0; j < h.count; j++) {
        if (kinds[j] === H_XFCC && f[j * 4 + 3] > f[j * 4 + 2]) extra += f[j * 4 + 3] - f[j * 4 + 2] + 1;
      }
    }
  }
  let clText: Uint8Array | null = null;
  if (h.contentLengthRewrite) {
    clText = ascii(String(h.contentLength));
    extra += CONTENT_LENGTH_PREFIX.length + clText.length + 2;
  }
  const replaceHost = opts.host ?? null;
  if (replaceHost !== null) dropped = true;
  const host = replaceHost ?? (h.hostCount === 0 ? opts.defaultHost : null);
  if (host !== null) extra += HOST_PREFIX.length + host.length + 2;
  const up = opts.upgrade ? h.upgradeField : -1;
  if (up >= 0) extra += CONNECTION_UPGRADE.length + (f[up * 4 + 3] - f[up * 4]) + 2;
  const fields = opts.extraFields ?? null;
  if (fields !== null) extra += fields.length;
  const target = opts.target ?? null;

  if (!dropped && target === null && h.minor === 1 && !h.shared) {
    // The received head unchanged up to its final CRLF, then the additions and the final CRLF.
    if (extra === 0) return { first: b.subarray(h.start, h.end), second: null };
    const tail = outBuffer(extra + 2);
    let o = putAdditions(tail, 0, h, xfcc, clText, host, up);
    if (fields !== null) o = putAll(tail, o, fields);
    tail[o] = CR;
    tail[o + 1] = LF;
    return { first: b.subarray(h.start, h.end - 2), second: tail };
  }

  // Copy: request line (version rewritten to HTTP/1.1), kept fields, additions.
  const lineEnd = target === null ? h.targetEnd - h.start : h.targetStart - h.start + target.length;
  let size = lineEnd + 1 + HTTP11.length + 2 + extra + 2;
  for (let j = 0; j < h.count; j++) {
    if (keep(h, j, replaceHost !== null)) size += f[j * 4 + 3] - f[j * 4] + 2;
  }
  const out = outBuffer(size);
  let o = target === null ? put(out, 0, b, h.start, h.targetEnd) : put(out, 0, b, h.start, h.targetStart);
  if (target !== null) o = putAll(out, o, target);
  out[o++] = 0x20;
  o = putAll(out, o, HTTP11);
  o = putAll(out, o, CRLF);
  for (let j = 0; j < h.count; j++) {
    if (!keep(h, j, replaceHost !== null)) continue;
    o = put(out, o, b, f[j * 4], f[j * 4 + 3]);
    out[o++] = CR;
    out[o++] = LF;
  }
  o = putAdditions(out, o, h, xfcc, clText, host, up);
  if (fields !== null) o = putAll(out, o, fields);
  out[o++] = CR;
  out[o++] = LF;
  return { first: out, second: null };
}

function keep(h: HttpHead, j: number, replaceHost: boolean): boolean {
  if (h.drop[j] === 1) return false;
  const k = h.kinds[j];
  return k !== H_XFCC && !(replaceHost && k === H_HOST);
}

function putAdditions(
  out: Uint8Array,
  o: number,
  h: HttpHead,
  xfcc: Uint8Array | null,
  clText: Uint8Array | null,
  host: Uint8Array | null,
  up: number,
): number {
  const b = h.buf, f = h.fields;
  if (xfcc !== null) {
    o = putAll(out, o, XFCC_PREFIX);
    if (h.xfccCount > 0) {
      // APPEND_FORWARD: the values received (several fields joined with ","), then this hop's element.
      for (let j = 0; j < h.count; j++) {
        if (h.kinds[j] !== H_XFCC || f[j * 4 + 3] === f[j * 4 + 2]) continue;
        o = put(out, o, b, f[j * 4 + 2], f[j * 4 + 3]);
        out[o++] = 0x2c;
      }
    }
    o = putAll(out, o, xfcc);
    out[o++] = CR;
    out[o++] = LF;
  }
  if (clText !== null) {
    o = putAll(out, o, CONTENT_LENGTH_PREFIX);
    o = putAll(out, o, clText);
    out[o++] = CR;
    out[o++] = LF;
  }
  if (host !== null) {
    o = putAll(out, o, HOST_PREFIX);
    o = putAll(out, o, host);
    out[o++] = CR;
    out[o++] = LF;
  }
  if (up >= 0) {
    o = putAll(out, o, CONNECTION_UPGRADE);
    o = put(out, o, b, f[up * 4], f[up * 4 + 3]);
    out[o++] = CR;
    out[o++] = LF;
  }
  return o;
}

/** How the response body is written downstream. */
export const BODY_NONE = 0;
/** Copied as received (Content-Length, or chunked to an HTTP/1.1 client). */
export const BODY_AS_IS = 1;
/** Chunked from the application, decoded for an HTTP/1.0 client. */
export const BODY_DECHUNK = 2;
/** Delimited by close from the application, sent chunked to an HTTP/1.1 client. */
export const BODY_RECHUNK = 3;
/** Delimited by close on both sides. */
export const BODY_UNTIL_CLOSE = 4;

/** How the downstream response head differs from the received one. */
export interface ResponseHeadOptions {
  /** One of BODY_*. */
  body: number;
  /** The downstream connection stays open after this response. */
  keepAlive: boolean;
  /** The client's HTTP minor version (1.0 clients need `connection: keep-alive` to keep it). */
  clientMinor: number;
  /** A 101 response to a forwarded upgrade: keep Upgrade, send `connection: upgrade`. */
  upgrade: boolean;
}

/**
 * The response head for the client, always `HTTP/1.1 <status> <reason>`: hop-by-hop fields removed,
 * Transfer-Encoding removed when decoding and added when re-chunking, and this hop's Connection.
 * `body`, when given, follows the head in the same buffer (one write for a small response).
 */
export function encodeResponseHead(h: HttpHead, opts: ResponseHeadOptions, body?: Uint8Array): HeadBytes {
  const b = h.buf, f = h.fields;
  const dropTe = opts.body === BODY_DECHUNK;
  let connection: Uint8Array | null = null;
  if (opts.upgrade) connection = CONNECTION_UPGRADE;
  else if (!opts.keepAlive) connection = CONNECTION_CLOSE;
  else if (opts.clientMinor === 0) connection = CONNECTION_KEEP_ALIVE;
  let clText: Uint8Array | null = null;
  if (h.contentLengthRewrite) clText = ascii(String(h.contentLength));
  let size = HTTP11_SP.length + (h.lineEnd - h.statusStart) + 2;
  for (let j = 0; j < h.count; j++) {
    if (keepResponseField(h, j, dropTe, opts.upgrade)) size += f[j * 4 + 3] - f[j * 4] + 2;
  }
  if (connection !== null) size += connection.length;
  if (opts.body === BODY_RECHUNK) size += TE_CHUNKED.length;
  if (clText !== null) size += CONTENT_LENGTH_PREFIX.length + clText.length + 2;
  const out = outBuffer(body === undefined ? size : size + body.length);
  let o = putAll(out, 0, HTTP11_SP);
  o = put(out, o, b, h.statusStart, h.lineEnd);
  for (let j = 0; j < h.count; j++) {
    if (!keepResponseField(h, j, dropTe, opts.upgrade)) continue;
    o = put(out, o, b, f[j * 4], f[j * 4 + 3]);
    out[o++] = CR;
    out[o++] = LF;
  }
  if (clText !== null) {
    o = putAll(out, o, CONTENT_LENGTH_PREFIX);
    o = putAll(out, o, clText);
    out[o++] = CR;
    out[o++] = LF;
  }
  if (opts.body === BODY_RECHUNK) o = putAll(out, o, TE_CHUNKED);
  if (connection !== null) o = putAll(out, o, connection);
  out[o++] = CR;
  out[o++] = LF;
  if (body !== undefined) putAll(out, o, body);
  return { first: out, second: null };
}

function keepResponseField(h: HttpHead, j: number, dropTe: boolean, upgrade: boolean): boolean {
  if (upgrade && j === h.upgradeField) return true;
  if (h.drop[j] === 1) return false;
  return !(dropTe && h.kinds[j] === H_TRANSFER_ENCODING) &&
    !(h.contentLengthRewrite && h.kinds[j] === H_CONTENT_LENGTH);
}

/** A local reply: `HTTP/1.1 <status> <reason>` with a short text body. */
export function encodeLocalReply(status: number, body: string, close: boolean): Uint8Array {
  const text = `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${body.length}\r\n` +
    `content-type: text/plain\r\n${close ? "connection: close\r\n" : ""}\r\n${body}`;
  return ascii(text);
}

/** A response a request filter sends instead of forwarding. */
export interface FilterReply {
  status: number;
  /** Extra header lines, each ending in CRLF (`www-authenticate: ...\r\n`), or empty. */
  headers: string;
  /** Text body. */
  body: string;
}

/** A filter's reply: `HTTP/1.1 <status> <reason>`, its headers, a text body. */
export function encodeFilterReply(reply: FilterReply, close: boolean): Uint8Array {
  const body = new TextEncoder().encode(reply.body);
  const head = ascii(
    `HTTP/1.1 ${reply.status} ${reasonPhrase(reply.status)}\r\ncontent-length: ${body.length}\r\n` +
      `content-type: text/plain\r\n${reply.headers}${close ? "connection: close\r\n" : ""}\r\n`,
  );
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** Reason phrases of the statuses the proxy itself sends. */
export function reasonPhrase(status: number): string {
  switch (status) {
    case 100:
      return "Continue";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 408:
      return "Request Timeout";
    case 417:
      return "Expectation Failed";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}
