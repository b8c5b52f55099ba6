/**
 * Request-smuggling payloads: HTTP Garden's (narfindustries/http-garden TROPHIES.md; "S<n>" is its
 * server bug n, "T<n>" its transducer bug n) and the classic CL.TE / TE.CL forms. Each hides
 * {@link inner} (a GET of the entry's marker path, which the first proxy's policy denies) where a
 * parser that disagrees with ours would find a second request. The oracle is the app's access log:
 * the marker must never appear there.
 *
 * "Envoy" is what its HTTP/1 codec does (http-parser / Balsa, RFC 9112 strict, Istio's defaults).
 *
 * @module
 */
import { type CaseContext, envoyRefuses, type HostileCase, inner, innerFree } from "./corpus.ts";

/** A POST /anything head with `fields` (each a full line without CRLF) and then `rest`. */
function post(c: CaseContext, fields: string[], rest: string, target = "/anything"): string {
  return `POST ${target} HTTP/1.1\r\nHost: ${c.host}\r\n${fields.map((f) => `${f}\r\n`).join("")}\r\n${rest}`;
}

/**
 * CL.TE with a disguised Transfer-Encoding: `te` (one or more field lines) plus a Content-Length that
 * covers the last chunk and {@link inner}. A proxy that ignores the disguise and frames by
 * Content-Length forwards the inner request as body; an app that honours the disguise ends the body
 * at the last chunk and runs the inner request.
 */
function clte(c: CaseContext, te: string[]): string {
  const body = `0\r\n\r\n${inner(c)}`;
  return post(c, [...te, `Content-Length: ${body.length}`], body);
}

/** A chunked body that carries `data` in one chunk, then the last chunk. */
function chunk(data: string): string {
  return `${data.length.toString(16)}\r\n${data}\r\n0\r\n\r\n`;
}

const CL_TE = "400: both Content-Length and Transfer-Encoding (allow_chunked_length false)";
const BAD_CL = "400: invalid Content-Length";
const BAD_TE = "501: unsupported Transfer-Encoding";
const BAD_HEADER = "400: invalid header line";
const BAD_CHUNK = "400: invalid chunk";

const smuggle = (
  id: string,
  what: string,
  envoy: string,
  bytes: (c: CaseContext) => string,
): HostileCase => ({ id, group: "smuggling", what, envoy, bytes, refuse: envoyRefuses(envoy) });

/** The smuggling cases. */
export const SMUGGLING_CASES: HostileCase[] = [
  smuggle("cl-te", "CL.TE: Content-Length covers all, chunked ends early", CL_TE, (c) => {
    const body = `0\r\n\r\n${inner(c)}`;
    return post(c, [`Content-Length: ${body.length}`, "Transfer-Encoding: chunked"], body);
  }),
  smuggle("te-cl", "TE.CL: chunked covers all, Content-Length: 4 ends early", CL_TE, (c) => {
    return post(c, ["Transfer-Encoding: chunked", "Content-Length: 4"], chunk(inner(c)));
  }),
  smuggle(
    "cl-dup-0-n",
    "two Content-Length, 0 then n (T22)",
    "400: multiple differing Content-Length",
    (c) => {
      const i = inner(c);
      return post(c, ["Content-Length: 0", `Content-Length: ${i.length}`], i);
    },
  ),
  smuggle(
    "cl-dup-n-0",
    "two Content-Length, n then 0 (S23)",
    "400: multiple differing Content-Length",
    (c) => {
      const i = inner(c);
      return post(c, [`Content-Length: ${i.length}`, "Content-Length: 0"], i);
    },
  ),
  smuggle("cl-list", "Content-Length: 0, n (a list of differing values)", BAD_CL, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length: 0, ${i.length}`], i);
  }),
  smuggle("cl-plus", "Content-Length: +n (Python int accepts)", BAD_CL, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length: +${i.length}`], i);
  }),
  smuggle("cl-hex", "Content-Length: 0x<n> (T1)", BAD_CL, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length: 0x${i.length.toString(16)}`], i);
  }),
  smuggle("cl-underscore", "Content-Length: 1_0 (S10)", BAD_CL, (c) => {
    return post(c, ["Content-Length: 1_0"], `0123456789${inner(c)}`);
  }),
  smuggle(
    "cl-negative",
    "Content-Length: -1 (S26)",
    BAD_CL,
    (c) => post(c, ["Content-Length: -1"], inner(c)),
  ),
  smuggle(
    "cl-suffix",
    "Content-Length: 1Z (S29)",
    BAD_CL,
    (c) => post(c, ["Content-Length: 1Z"], `Z${inner(c)}`),
  ),
  smuggle(
    "cl-leading-zero",
    "Content-Length: 0<n>, leading zero (S32; valid, must mean n)",
    "accepted as n",
    (c) => {
      const i = inner(c);
      return post(c, [`Content-Length: 0${i.length}`], i);
    },
  ),
  smuggle("cl-empty", "empty Content-Length, then a request (S38, T5)", BAD_CL, (c) => {
    return post(c, ["Content-Length: "], inner(c));
  }),
  smuggle("cl-empty-then-n", "empty Content-Length, then Content-Length: n (T11)", BAD_CL, (c) => {
    const i = inner(c);
    return post(c, ["Content-Length: ", `Content-Length: ${i.length}`], i);
  }),
  smuggle("cl-space-colon", "Content-Length : n, space before colon (S3)", BAD_HEADER, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length : ${i.length}`], i);
  }),
  smuggle(
    "cl-first-line-ws",
    "first field line starts with a tab: \\tContent-Length (S4)",
    BAD_HEADER,
    (c) => {
      const i = inner(c);
      return `POST /anything HTTP/1.1\r\n\tContent-Length: ${i.length}\r\nHost: ${c.host}\r\n\r\n${i}`;
    },
  ),
  smuggle("cl-no-colon", "Content-Length n without a colon (S28)", BAD_HEADER, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length ${i.length}`], i);
  }),
  smuggle("cl-name-x85", "Content-Length\\x85: n, obs-text in the name (S20, T6)", BAD_HEADER, (c) => {
    const i = inner(c);
    return post(c, [`Content-Length\x85: ${i.length}`], i);
  }),
  smuggle("cl-get-body", "GET with a Content-Length body (T21)", "accepted; the body is forwarded", (c) => {
    const i = inner(c);
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\nContent-Length: ${i.length}\r\n\r\n${i}`;
  }),
  smuggle(
    "cl-0-pipelined",
    "CL 0 then a pipelined request (S48): it must be seen and denied",
    "second request parsed and authorized (403)",
    (c) => post(c, ["Content-Length: 0"], inner(c)),
  ),
  smuggle(
    "te-chunked-identity",
    "Transfer-Encoding: chunked, identity + CL",
    BAD_TE,
    (c) => clte(c, ["Transfer-Encoding: chunked, identity"]),
  ),
  smuggle("te-identity-chunked", "Transfer-Encoding: identity, chunked", BAD_TE, (c) => {
    return post(c, ["Transfer-Encoding: identity, chunked"], `0\r\n\r\n${inner(c)}`);
  }),
  smuggle(
    "te-xchunked",
    "Transfer-Encoding: xchunked + CL",
    BAD_TE,
    (c) => clte(c, ["Transfer-Encoding: xchunked"]),
  ),
  smuggle(
    "te-comma-chunked",
    "Transfer-Encoding: ,chunked + CL (S21, T9, T15, T18)",
    BAD_TE,
    (c) => clte(c, ["Transfer-Encoding: ,chunked"]),
  ),
  smuggle("te-unknown", "Transfer-Encoding: blegh, no CL (S44)", BAD_TE, (c) => {
    return post(c, ["Transfer-Encoding: blegh"], `0\r\n\r\n${inner(c)}`);
  }),
  smuggle("te-dup", "two Transfer-Encoding: chunked (S11, T25)", "400 (chunked applied twice)", (c) => {
    return post(c, ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], `0\r\n\r\n${inner(c)}`);
  }),
  smuggle("te-chunked-chunked", "Transfer-Encoding: chunked, chunked", "400 (chunked applied twice)", (c) => {
    return post(c, ["Transfer-Encoding: chunked, chunked"], `0\r\n\r\n${inner(c)}`);
  }),
  smuggle(
    "te-space-colon",
    "Transfer-Encoding : chunked + CL",
    BAD_HEADER,
    (c) => clte(c, ["Transfer-Encoding : chunked"]),
  ),
  smuggle(
    "te-obs-fold",
    "Transfer-Encoding:\\r\\n chunked (obs-fold) + CL",
    BAD_HEADER,
    (c) => clte(c, ["Transfer-Encoding:", " chunked"]),
  ),
  smuggle(
    "te-folded-line",
    "X: a\\r\\n\\tTransfer-Encoding: chunked (a folded line)",
    BAD_HEADER,
    (c) => clte(c, ["X: a", "\tTransfer-Encoding: chunked"]),
  ),
  smuggle(
    "te-name-continued",
    "Transfer-\\r\\nEncoding: chunked (S37, T14)",
    BAD_HEADER,
    (c) => clte(c, ["Transfer-", "Encoding: chunked"]),
  ),
  smuggle(
    "te-vtab",
    "Transfer-Encoding: \\x0bchunked + CL",
    BAD_HEADER,
    (c) => clte(c, ["Transfer-Encoding: \x0bchunked"]),
  ),
  smuggle(
    "te-nbsp",
    "Transfer-Encoding: \\xa0chunked\\xa0 + CL (S12)",
    BAD_TE,
    (c) => clte(c, ["Transfer-Encoding: \xa0chunked\xa0"]),
  ),
  smuggle("te-xff", "Host and Transfer-Encoding wrapped in \\xff (S46)", BAD_TE, (c) => {
    return `POST /anything HTTP/1.1\r\nHost: \xff${c.host}\xff\r\nTransfer-Encoding: \xffchunked\xff\r\n\r\n` +
      `0\r\n\r\n${inner(c)}`;
  }),
  smuggle("te-upper-cl", "Transfer-Encoding: CHUNKED + CL", CL_TE, (c) => {
    const body = `0\r\n\r\n${inner(c)}`;
    return post(c, ["Transfer-Encoding: CHUNKED", `Content-Length: ${body.length}`], body);
  }),
  smuggle("te-http10", "HTTP/1.0 with Transfer-Encoding: chunked", "400: TE in HTTP/1.0", (c) => {
    return `POST /anything HTTP/1.0\r\nHost: ${c.host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${
      inner(c)
    }`;
  }),
  smuggle("lf-in-field", "Useless:\\n\\n then a request (S19)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\nUseless:\n\n${inner(c)}`;
  }),
  smuggle("lf-only-head", "LF-only line endings in the head (T16), CL body", "400: bare LF", (c) => {
    const i = inner(c);
    return `POST /anything HTTP/1.1\nHost: ${c.host}\nContent-Length: ${i.length}\n\n${i}`;
  }),
  smuggle(
    "cr-in-value",
    "Visible: :/\\rTransfer-Encoding: chunked (S13, T10)",
    BAD_HEADER,
    (c) => clte(c, ["Visible: :/\rTransfer-Encoding: chunked"]),
  ),
  smuggle("nul-in-value", "NUL in a header value (S2, S35, T12)", BAD_HEADER, (c) => {
    return post(c, ["Header: v\x00\ralue", "Content-Length: 0"], inner(c));
  }),
  smuggle("nul-in-host", "Host: a\\x00.b (T12)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\x00.evil\r\n\r\n${inner(c)}`;
  }),
  smuggle("nul-field-line", "a field line c\\x00 without colon (T20)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\na:b\r\nc\x00\r\n\r\n${inner(c)}`;
  }),
  smuggle("empty-name", "an empty header name ': ignored' (S18, S27)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\n: ignored\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
  }),
  smuggle("cr-x-head-end", "\\r\\n\\rZ ends the head for some parsers (S30)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\n\rZ${inner(c)}`;
  }),
  smuggle("bad-name-bytes", "control and separator bytes in a header name (S14)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\n\x01\x02 "(),/;<=>?@[]{}: x\r\n\r\n${inner(c)}`;
  }),
  smuggle("chunk-underscore", "chunk size 0_2e (S1, S22)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `0_2e\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-0x", "chunk size 0x<n> (S25, T19)", BAD_CHUNK, (c) => {
    const i = inner(c);
    return post(c, ["Transfer-Encoding: chunked"], `0x${i.length.toString(16)}\r\n${i}\r\n0\r\n\r\n`);
  }),
  smuggle("chunk-sign", "chunk size -0x0 / +0 (T19)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `+0\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-overflow", "chunk size of 17 hex digits that wraps to 1 in 64 bits", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `10000000000000001\r\nZ\r\n0\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-leading-ws", "chunk size with leading spaces (T24)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `   0\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-suffix", "chunk size 1these-bytes-never-get-validated (T7)", BAD_CHUNK, (c) => {
    return post(
      c,
      ["Transfer-Encoding: chunked"],
      `1these-bytes-never-get-validated\r\nZ\r\n0\r\n\r\n${inner(c)}`,
    );
  }),
  smuggle("chunk-invalid", "INVALID!!! as a chunk line (S47, T2)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `INVALID!!!\r\n${inner(c)}`);
  }),
  smuggle("chunk-empty-size", "an empty chunk size line (S17)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-ext-cr", "\\r inside a chunk extension: 5\\r\\r;ABCD (S31, T3)", BAD_CHUNK, (c) => {
    const i = inner(c);
    return post(
      c,
      ["Transfer-Encoding: chunked"],
      `2\r\r;a\r\n02\r\n${i.length.toString(16)}\r\n${i}\r\n0\r\n\r\n`,
    );
  }),
  smuggle("chunk-ext-cr-after", "\\r after a chunk extension: 41;a=b\\r\\r (S36)", BAD_CHUNK, (c) => {
    const i = inner(c);
    return post(c, ["Transfer-Encoding: chunked"], `${i.length.toString(16)};a=b\r\r${i}\r\n0\r\n\r\n`);
  }),
  smuggle("chunk-ext-valid", "a valid chunk extension 5;a=b (forwarded as a body)", "accepted", (c) => {
    const i = inner(c);
    return post(c, ["Transfer-Encoding: chunked"], `${i.length.toString(16)};a="b c"\r\n${i}\r\n0\r\n\r\n`);
  }),
  smuggle("chunk-bad-end", "chunk data not followed by CRLF", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `5\r\nhelloXX0\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-lf-end", "chunk data ended by a bare LF (T13)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `a\r\n0123456789\n0\r\n\r\n${inner(c)}`);
  }),
  smuggle("chunk-lf-lines", "chunk lines ended by bare LF", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `5\nhello\n0\n\n${inner(c)}`);
  }),
  smuggle("chunk-cr-0", "1\\r0\\n: a bare CR in the size line (T4)", BAD_CHUNK, (c) => {
    return post(c, ["Transfer-Encoding: chunked"], `1\r0\n${inner(c)}`);
  }),
  smuggle(
    "chunk-trailer-request",
    "trailer X:POST / HTTP/1.1 (S39)",
    "accepted; trailer forwarded or dropped",
    (c) => {
      return post(c, ["Transfer-Encoding: chunked"], `0\r\nX:POST / HTTP/1.1\r\n\r\n${inner(c)}`);
    },
  ),
  smuggle("chunk-extra-crlf", "an extra CRLF before the last chunk (T17)", BAD_CHUNK, (c) => {
    const i = inner(c);
    return post(c, ["Transfer-Encoding: chunked"], `${i.length.toString(16)}\r\n${i}\r\n\r\n0\r\n\r\n`);
  }),
  smuggle(
    "chunk-trailing-nul",
    "a NUL after the last chunk (bonus 3)",
    "200, then 400 for the next request (it starts with NUL)",
    (c) => {
      return post(c, ["Transfer-Encoding: chunked"], `0\r\n\r\n\x00${inner(c)}`);
    },
  ),
  smuggle("line-lf-separator", "GET /\\nHTTP/1.1: LF as a request-line separator (S9)", "400", (c) => {
    return `GET /anything\nHTTP/1.1\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
  }),
  smuggle(
    "version-junk",
    "HTTP/1.32, HTTP/\\r\\r1.1 and HTTP/4294967295.255 (S5, S15, S24)",
    "400/505",
    (c) => {
      return `GET /anything HTTP/1.32\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
    },
  ),
  smuggle("method-junk", 'method G=":<>(e),[T];?" (S6)', "400: invalid method", (c) => {
    return `G=":<>(e),[T];?" /anything HTTP/1.1\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
  }),
  smuggle("method-nul", "method \\x00 with HTTP/....0596.7407 (S40)", "400", (c) => {
    return `\x00 / HTTP/............0596.7407.\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
  }),
  smuggle("target-bang", "request target ! (S7)", "400: invalid target", (c) => {
    return `GET ! HTTP/1.1\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
  }),
  smuggle("name-obs-text", "\\xefoo: bar, obs-text in a name (S8)", BAD_HEADER, (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\n\xefoo: bar\r\n\r\n${inner(c)}`;
  }),
  smuggle(
    "upgrade-no-101",
    "Upgrade: websocket answered without 101, then a request",
    "no tunnel without 101; next request parsed (403)",
    (c) =>
      `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n${
        inner(c)
      }`,
  ),
  smuggle(
    "upgrade-h2c",
    "Upgrade: h2c with HTTP2-Settings, then a request",
    "h2c upgrade not honoured",
    (c) => {
      return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
        `Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n${inner(c)}`;
    },
  ),
  smuggle(
    "connect",
    "CONNECT to the service, then a request in the 'tunnel'",
    "CONNECT not routed (404/403)",
    (c) => {
      return `CONNECT ${c.host} HTTP/1.1\r\nHost: ${c.host}\r\n\r\n${inner(c)}`;
    },
  ),
  smuggle(
    "expect-cl-mismatch",
    "Expect: 100-continue with a Content-Length shorter than what follows",
    "100, body of n, rest parsed as the next request (403)",
    (c) => post(c, ["Expect: 100-continue", "Content-Length: 3"], `abc${inner(c)}`),
  ),
  smuggle(
    "denied-cl-body",
    "a denied POST /headers whose Content-Length body is a request",
    "403; the body is drained or the connection closed, never parsed",
    (c) => {
      const i = innerFree(c);
      return post(c, [`Content-Length: ${i.length}`], i, "/headers");
    },
  ),
  smuggle(
    "denied-chunked-body",
    "a denied POST /headers whose chunked body is a request",
    "403; the body is drained or the connection closed, never parsed",
    (c) => post(c, ["Transfer-Encoding: chunked"], chunk(innerFree(c)), "/headers"),
  ),
  smuggle(
    "denied-expect-body",
    "a denied POST /headers with Expect: 100-continue, then its body (a request)",
    "403 without 100; the body is never parsed as a request",
    (c) => {
      const i = innerFree(c);
      return post(c, ["Expect: 100-continue", `Content-Length: ${i.length}`], i, "/headers");
    },
  ),
  smuggle(
    "head-pipelined",
    "HEAD (a response with Content-Length and no body), then a request",
    "200 without body, then the next request parsed (403)",
    (c) => `HEAD /anything HTTP/1.1\r\nHost: ${c.host}\r\n\r\n${inner(c)}`,
  ),
  smuggle(
    "http10-pipelined",
    "HTTP/1.0 without keep-alive, then a request",
    "200 and close; the rest is never read",
    (c) => `GET /anything HTTP/1.0\r\nHost: ${c.host}\r\n\r\n${inner(c)}`,
  ),
  smuggle("dup-host", "two Host headers", "400: multiple Host", (c) => {
    return `GET /anything HTTP/1.1\r\nHost: ${c.host}\r\nHost: evil.example\r\n\r\n${inner(c)}`;
  }),
];
