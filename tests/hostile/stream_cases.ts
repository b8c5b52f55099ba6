/**
 * Connection-level cases: deep pipelining, an HTTP/2 preface on an HTTP/1.1 port, and responses
 * with ambiguous framing that the app can be made to send (httpbin's /response-headers sets any
 * response header the query names), which a proxy must refuse (502) rather than pass on to the
 * client or keep the upstream connection after.
 *
 * @module
 */
import { type CaseContext, HEADERS_BODY, type HostileCase, inner } from "./corpus.ts";

/** An HTTP/2 frame: 9-byte header (length, type, flags, stream) and payload. */
function frame(type: number, flags: number, stream: number, payload: number[]): string {
  const n = payload.length;
  const head = [n >> 16, (n >> 8) & 0xff, n & 0xff, type, flags, 0, 0, 0, stream];
  return String.fromCharCode(...head, ...payload);
}

/** A HEADERS frame for `GET <path>` with literal fields without indexing (no HPACK table). */
function h2Get(c: CaseContext, path: string): string {
  const field = (name: string, value: string) => [
    0,
    name.length,
    ...[...name].map((ch) => ch.charCodeAt(0)),
    value.length,
    ...[...value].map((ch) => ch.charCodeAt(0)),
  ];
  const block = [
    ...field(":method", "GET"),
    ...field(":scheme", "http"),
    ...field(":path", path),
    ...field(":authority", c.host),
  ];
  return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, []) + frame(1, 0x5, 1, block);
}

/** The stream cases. */
export const STREAM_CASES: HostileCase[] = [
  {
    id: "pipeline-100",
    group: "smuggling",
    what: "99 pipelined GET /anything in one write, then the marker",
    envoy: "each answered in order; the last denied (403)",
    bytes: (c) => `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\n\r\n`.repeat(99) + inner(c),
  },
  {
    id: "h2-preface",
    group: "smuggling",
    what: "HTTP/2 prior knowledge (preface, SETTINGS, HEADERS GET /headers) on the HTTP/1.1 port",
    envoy: "codec AUTO speaks h2c: 403 for /headers",
    bytes: (c) => h2Get(c, "/headers"),
    never: HEADERS_BODY,
  },
  {
    id: "response-dup-cl",
    group: "smuggling",
    what: "the app answers with three differing Content-Length (68, 3, 9), then a pipelined request",
    envoy: "502: invalid upstream response",
    bytes: (c) =>
      `GET /response-headers?Content-Length=3&Content-Length=9 HTTP/1.1\r\nHost: ${c.host}\r\n\r\n${
        inner(c)
      }`,
    refuse: true,
  },
  {
    id: "conn-nominates-cl",
    group: "smuggling",
    what: "Connection: Content-Length (a framing header nominated as hop-by-hop), CL body = a request",
    envoy: "400 (framing header nominated) or the header kept",
    bytes: (c) => {
      const i = inner(c);
      return `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nConnection: Content-Length\r\n` +
        `Content-Length: ${i.length}\r\n\r\n${i}`;
    },
  },
  {
    id: "conn-nominates-te",
    group: "smuggling",
    what: "Connection: Transfer-Encoding with a chunked body that carries a request",
    envoy: "400 (framing header nominated) or the header kept",
    bytes: (c) => {
      const i = inner(c);
      return `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nConnection: Transfer-Encoding\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n${i.length.toString(16)}\r\n${i}\r\n0\r\n\r\n`;
    },
  },
  {
    id: "no-host",
    group: "smuggling",
    what: "HTTP/1.1 without Host",
    envoy: "400: missing Host",
    bytes: (c) => `GET /anything HTTP/1.1\r\n\r\n${inner(c)}`,
    refuse: true,
  },
  {
    id: "leading-crlf-flood",
    group: "smuggling",
    what: "10,000 empty lines before the request line",
    envoy: "400 (or the lines skipped)",
    bytes: (c) => "\r\n".repeat(10_000) + inner(c),
  },
  {
    id: "chunks-10000",
    group: "smuggling",
    what: "a valid body of 10,000 one-byte chunks",
    envoy: "200",
    bytes: (c) =>
      `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
      "1\r\nZ\r\n".repeat(10_000) + "0\r\n\r\n",
    want: [200],
  },
  {
    id: "chunk-ext-1mib",
    group: "oversized",
    what: "a chunk extension of 1 MiB",
    envoy: "400 or accepted (no codec limit on extensions)",
    bytes: (c) =>
      `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `1;a=${"x".repeat(1 << 20)}\r\nZ\r\n0\r\n\r\n${inner(c)}`,
  },
  {
    id: "trailers-1mib",
    group: "oversized",
    what: "1 MiB of trailer fields",
    envoy: "431/400 (trailers count against the header limits)",
    bytes: (c) =>
      `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nZ\r\n0\r\n` +
      "X-T: aaaaaaaa\r\n".repeat(1 << 16) + `\r\n${inner(c)}`,
  },
  {
    id: "abandoned-chunked",
    group: "smuggling",
    what: "a chunked body left unfinished (no last chunk); the pool must not reuse that upstream",
    envoy: "held until the idle timeout, upstream reset",
    bytes: (c) =>
      `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`,
  },
  {
    id: "abandoned-cl",
    group: "smuggling",
    what: "a Content-Length body of 100 with 10 bytes sent, then the client goes",
    envoy: "held until the idle timeout, upstream reset",
    bytes: (c) => `POST /anything HTTP/1.1\r\nHost: ${c.host}\r\nContent-Length: 100\r\n\r\n0123456789`,
  },
];
