/**
 * The heads of an HTTP/2 stream sent to an HTTP/1.1 upstream, as Envoy's HTTP/1 codec writes and
 * reads them (source/common/http/http1/codec_impl.cc): the request head is the one
 * ./request_head.ts adapts for the policies (`:authority` as Host, `:method` and `:path` as the
 * request line, `cookie` fields joined), written by the HTTP/1.1 path's own encoder
 * (../http/encode.ts: hop-by-hop fields and `expect: 100-continue` dropped, `te: trailers` kept),
 * with the body's framing added; the response head, parsed by the HTTP/1.1 parser with all its
 * checks, becomes an HTTP/2 header list without the connection-specific fields RFC 9113 section
 * 8.2.2 forbids (Connection and the fields it nominates, Keep-Alive, Proxy-Connection,
 * Transfer-Encoding, Upgrade, TE).
 *
 * @module
 */
import { ascii } from "../http/chars.ts";
import { encodeRequestHead, type HeadBytes } from "../http/encode.ts";
import {
  H_CONNECTION,
  H_HTTP2_SETTINGS,
  H_KEEP_ALIVE,
  H_PROXY_CONNECTION,
  H_TE,
  H_TRANSFER_ENCODING,
  H_UPGRADE,
  type HttpHead,
} from "../http/http_head.ts";
import type { AdaptedHead, HeaderList } from "./request_head.ts";

/** How the request body is framed upstream. */
export type RequestFraming = "none" | "length" | "chunked";

/** The HTTP/1.1 request head of an HTTP/2 request and how its body is framed. */
export interface Http1Request {
  head: HeadBytes;
  framing: RequestFraming;
}

const CHUNKED = ascii("transfer-encoding: chunked\r\n");
const ZERO_LENGTH = ascii("content-length: 0\r\n");

/**
 * The request head for the HTTP/1.1 upstream. `endStream`: the request has no body (END_STREAM on
 * its HEADERS). The body is framed by its `content-length` when it has one (the HTTP/2 codec holds
 * the DATA to it), else chunked; a request without a body and without `content-length` gets
 * `content-length: 0` unless it is a GET or HEAD, as Envoy's codec does. `xfccElement`: this hop's
 * X-Forwarded-Client-Cert element, appended to the received ones (APPEND_FORWARD); null: the field
 * is removed (../http/encode.ts).
 */
export function http1RequestHead(
  adapted: AdaptedHead,
  endStream: boolean,
  xfccElement: Uint8Array | null = null,
): Http1Request {
  const h = adapted.head;
  let framing: RequestFraming;
  let extra: Uint8Array | null = null;
  if (h.contentLength >= 0) framing = h.contentLength === 0 ? "none" : "length";
  else if (endStream) {
    framing = "none";
    if (adapted.method !== "GET" && adapted.method !== "HEAD") extra = ZERO_LENGTH;
  } else {
    framing = "chunked";
    extra = CHUNKED;
  }
  const head = encodeRequestHead(h, {
    xfccElement,
    upgrade: false,
    defaultHost: ascii(adapted.authority ?? ""),
    extraFields: extra,
  });
  return { head, framing };
}

/** Response fields never forwarded into HTTP/2 (RFC 9113 section 8.2.2), by parser kind. */
function connectionSpecific(kind: number): boolean {
  return kind === H_CONNECTION || kind === H_KEEP_ALIVE || kind === H_PROXY_CONNECTION ||
    kind === H_TRANSFER_ENCODING || kind === H_UPGRADE || kind === H_TE || kind === H_HTTP2_SETTINGS;
}

/**
 * The HTTP/2 response header list of a parsed HTTP/1.1 response head: `:status`, then the fields in
 * order with lower-case names, without hop-by-hop and connection-specific fields; a Content-Length
 * the parser found repeated or as a list is sent once, canonical. A chunked response has no
 * Content-Length left (the parser drops it when Transfer-Encoding is present).
 */
export function http2ResponseHeaders(h: HttpHead): HeaderList {
  const out: HeaderList = [[":status", String(h.status)]];
  for (let j = 0; j < h.count; j++) {
    const kind = h.kinds[j];
    // A repeated or list Content-Length is marked dropped: it is added once below.
    if (h.drop[j] === 1 || connectionSpecific(kind)) continue;
    out.push([h.name(j).toLowerCase(), h.value(j)]);
  }
  if (h.contentLengthRewrite) out.push(["content-length", String(h.contentLength)]);
  return out;
}
