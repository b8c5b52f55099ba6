/**
 * An HTTP/2 request's header list seen as the HTTP/1.1 head that the rest of the data path reads
 * ({@link HttpHead}), so that HTTP/2 streams pass the very same router (../outbound/router.ts) and
 * filter chain (../filters: path normalization, RequestAuthentication, AuthorizationPolicy) as
 * HTTP/1.1 requests, with no second copy of that logic; and the decisions taken on that head
 * (fields dropped, fields added, a normalized path, an authority) applied back to the header list.
 *
 * The head is `<:method> <:path> HTTP/1.1`, `host: <:authority>` (RFC 9113 8.3.1: `:authority` takes
 * the place of Host; a `host` field that names another authority is refused with 400, as the RFC lets
 * a server do, so that policies and the application cannot see two different hosts), then the
 * regular fields in order, `cookie` fields joined with `; ` (RFC 9113 8.2.3). It is parsed by the
 * HTTP/1.1 parser (../http/head.ts), whose strict checks then apply to HTTP/2 as well (method token,
 * target characters, no `#`, field-value bytes, Content-Length). Size limits are the HTTP/2 codec's
 * (Envoy's header list limits); this parse only gets room for what it was given.
 *
 * @module
 */
import { ascii, latin1, TOKEN } from "../http/chars.ts";
import { HeadParser } from "../http/head.ts";
import { HttpError, type HttpHead, REQUEST } from "../http/http_head.ts";
import type { FilterReply, FilterVerdict } from "../http/session_types.ts";
import type { HeaderList } from "../grpc/local_reply.ts";

export type { HeaderList };

/** A request's header list as an {@link HttpHead}, and where each head field came from. */
export interface AdaptedHead {
  ok: true;
  head: HttpHead;
  /** Per head field: the index in the header list, or -1 for the synthesized Host and joined cookie. */
  origin: Int32Array;
  /** The pseudo-header values. */
  method: string;
  path: string;
  authority: string | undefined;
  scheme: string | undefined;
  /** The request's `content-type`, when it has one (gRPC replies depend on it). */
  contentType: string | undefined;
}

/** A header list that cannot be a request, with the status it is answered with and why. */
export interface RefusedHead {
  ok: false;
  status: number;
  reason: string;
}

/** The first value of a field by lower-case name, or undefined. */
export function headerValue(headers: HeaderList, name: string): string | undefined {
  for (const [n, v] of headers) if (n === name) return v;
  return undefined;
}

/**
 * The header list of a request as an {@link HttpHead} (see the module documentation).
 *
 * @param headers the decoded request header list, pseudo-headers first, names lower-case (the
 *   HTTP/2 codec has refused malformed lists: upper-case names, connection-specific fields,
 *   pseudo-headers after regular fields or repeated)
 * @param defaultAuthority the authority to use when the request has neither `:authority` nor `host`;
 *   undefined leaves the head without Host (the router then answers 400)
 */
export function adaptRequestHead(
  headers: HeaderList,
  defaultAuthority?: string,
): AdaptedHead | RefusedHead {
  let method: string | undefined, path: string | undefined;
  let authority: string | undefined, scheme: string | undefined, host: string | undefined;
  let contentType: string | undefined;
  const cookies: string[] = [];
  for (const [n, v] of headers) {
    if (n === ":method") method = v;
    else if (n === ":path") path = v;
    else if (n === ":authority") authority = v;
    else if (n === ":scheme") scheme = v;
    else if (n === ":protocol") {
      return { ok: false, status: 501, reason: "extended CONNECT is not supported" };
    } else if (n === "host") host ??= v;
    else if (n === "cookie") cookies.push(v);
    else if (n === "content-type") contentType ??= v;
  }
  if (method === undefined) return { ok: false, status: 400, reason: "missing :method" };
  // The codec validates these too; checked again here because the head is text that a space or line
  // break in a pseudo-header or name would change (the policies must see the fields as received).
  const bad = malformed(headers);
  if (bad !== null) return { ok: false, status: 400, reason: bad };
  if (method === "CONNECT") return { ok: false, status: 501, reason: "CONNECT is not supported" };
  if (path === undefined || path === "") return { ok: false, status: 400, reason: "missing :path" };
  if (authority !== undefined && host !== undefined && host.toLowerCase() !== authority.toLowerCase()) {
    return { ok: false, status: 400, reason: "host and :authority differ" };
  }
  const effective = authority ?? host ?? defaultAuthority;
  let text = `${method} ${path} HTTP/1.1\r\n`;
  const origin: number[] = [];
  if (effective !== undefined) {
    text += `host: ${effective}\r\n`;
    origin.push(-1);
  }
  for (let i = 0; i < headers.length; i++) {
    const [n, v] = headers[i];
    if (n[0] === ":" || n === "host" || n === "cookie") continue;
    text += `${n}: ${v}\r\n`;
    origin.push(i);
  }
  if (cookies.length > 0) {
    text += `cookie: ${cookies.join("; ")}\r\n`;
    origin.push(-1);
  }
  text += "\r\n";
  const bytes = ascii(text);
  const parser = new HeadParser(REQUEST, { maxHeadBytes: bytes.length + 1, maxHeaders: origin.length + 1 });
  try {
    if (parser.feed(bytes) !== bytes.length) {
      return { ok: false, status: 400, reason: "malformed header list" };
    }
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;
    return { ok: false, status: e.status, reason: e.message };
  }
  return {
    ok: true,
    head: parser.head,
    origin: Int32Array.from(origin),
    method,
    path,
    authority: effective,
    scheme,
    contentType,
  };
}

/** Why a header list cannot be written as an HTTP/1.1 head, or null. */
function malformed(headers: HeaderList): string | null {
  for (const [n, v] of headers) {
    const pseudo = n[0] === ":";
    for (let i = pseudo ? 1 : 0; i < n.length; i++) {
      const c = n.charCodeAt(i);
      if (c > 127 || TOKEN[c] !== 1 || (c >= 0x41 && c <= 0x5a)) {
        return `invalid header name ${JSON.stringify(n)}`;
      }
    }
    if (pseudo && n.length === 1) return "empty pseudo-header name";
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if (c === 0 || c === 0x0a || c === 0x0d || ((n === ":method" || n === ":path") && c <= 0x20)) {
        return `invalid character in ${n}`;
      }
    }
  }
  return null;
}

/** Header lines `name: value\r\n` as a header list (names lower-cased). */
export function headerLinesToList(lines: Uint8Array | string | null): HeaderList {
  if (lines === null) return [];
  const text = typeof lines === "string" ? lines : latin1(lines, 0, lines.length);
  const out: HeaderList = [];
  for (const line of text.split("\r\n")) {
    if (line === "") continue;
    const colon = line.indexOf(":");
    out.push([line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]);
  }
  return out;
}

/**
 * The header list to forward after a filter's verdict (`null`: the list unchanged): fields the filter
 * dropped from the head removed (verified tokens, the claim headers a client may not set), its added
 * fields appended, `:path` replaced by its target (the normalized path) and `:authority` by its host.
 * A `host` field is not forwarded when `:authority` is (HTTP/2 carries the authority there).
 */
export function applyVerdict(
  headers: HeaderList,
  adapted: AdaptedHead,
  verdict: FilterVerdict | null,
): HeaderList {
  const drop = new Set<number>();
  const h = adapted.head;
  for (let i = 0; i < h.count; i++) {
    if (h.drop[i] === 1 && adapted.origin[i] >= 0) drop.add(adapted.origin[i]);
  }
  const target = verdict?.target ?? null;
  const host = verdict?.host == null ? null : latin1(verdict.host, 0, verdict.host.length);
  const hasAuthority = headers.some(([n]) => n === ":authority");
  const out: HeaderList = [];
  for (let i = 0; i < headers.length; i++) {
    if (drop.has(i)) continue;
    const [n, v] = headers[i];
    if (n === ":path" && target !== null) out.push([n, latin1(target, 0, target.length)]);
    else if (n === ":authority" || (n === "host" && !hasAuthority)) out.push([n, host ?? v]);
    else if (n !== "host") out.push([n, v]);
  }
  if (verdict?.addFields) out.push(...headerLinesToList(verdict.addFields));
  return out;
}

/** A filter's reply as an HTTP/2 response: `:status`, its header lines, `content-type: text/plain`. */
export function filterReplyHeaders(reply: FilterReply, bodyLength: number): HeaderList {
  return [
    [":status", String(reply.status)],
    ["content-type", "text/plain"],
    ["content-length", String(bodyLength)],
    ...headerLinesToList(reply.headers),
  ];
}

/**
 * X-Forwarded-Client-Cert as Istio's sidecars set it (APPEND_FORWARD): with mutual TLS, the values
 * received joined with `,`, then this hop's element; without, any received value removed.
 */
export function withXfcc(headers: HeaderList, element: string | null): HeaderList {
  const received: string[] = [];
  const out: HeaderList = [];
  for (const h of headers) {
    if (h[0] === "x-forwarded-client-cert") {
      if (h[1] !== "") received.push(h[1]);
    } else out.push(h);
  }
  if (element !== null) out.push(["x-forwarded-client-cert", [...received, element].join(",")]);
  return out;
}
