import assert from "node:assert/strict";
import { type HeaderList, KIND_REQUEST, KIND_RESPONSE, KIND_TRAILERS, validateHeaders } from "./headers.ts";

const GET: HeaderList = [[":method", "GET"], [":scheme", "https"], [":authority", "a"], [":path", "/"]];

/** [name, list, kind, error pattern or null]: RFC 9113 8.2 and 8.3 as nghttp2 checks them. */
const CASES: [string, HeaderList, number, RegExp | null][] = [
  ["a plain GET", GET, KIND_REQUEST, null],
  ["CONNECT with :authority only", [[":method", "CONNECT"], [":authority", "a:443"]], KIND_REQUEST, null],
  [
    "CONNECT with :path",
    [[":method", "CONNECT"], [":authority", "a"], [":path", "/"]],
    KIND_REQUEST,
    /CONNECT/,
  ],
  ["no :method", GET.slice(1), KIND_REQUEST, /no :method/],
  ["no :path", GET.slice(0, 3), KIND_REQUEST, /no :scheme or :path/],
  ["empty :path", [...GET.slice(0, 3), [":path", ""]], KIND_REQUEST, /no :scheme or :path/],
  ["repeated :path", [...GET, [":path", "/x"]], KIND_REQUEST, /repeated/],
  ["pseudo after regular", [...GET.slice(0, 3), ["x", "1"], [":path", "/"]], KIND_REQUEST, /after a regular/],
  ["unknown pseudo", [...GET, [":foo", "1"]], KIND_REQUEST, /:foo in a request/],
  [":status in a request", [...GET, [":status", "200"]], KIND_REQUEST, /:status in a request/],
  ["uppercase name", [...GET, ["X-Foo", "1"]], KIND_REQUEST, /uppercase/],
  ["space in a name", [...GET, ["x foo", "1"]], KIND_REQUEST, /bad name character/],
  ["empty name", [...GET, ["", "1"]], KIND_REQUEST, /empty name/],
  ["CR in a value", [...GET, ["x", "a\rb"]], KIND_REQUEST, /NUL, CR or LF/],
  ["LF in a value", [...GET, ["x", "a\nb"]], KIND_REQUEST, /NUL, CR or LF/],
  ["NUL in a value", [...GET, ["x", "a\0b"]], KIND_REQUEST, /NUL, CR or LF/],
  ["connection", [...GET, ["connection", "close"]], KIND_REQUEST, /connection-specific/],
  ["keep-alive", [...GET, ["keep-alive", "1"]], KIND_REQUEST, /connection-specific/],
  ["proxy-connection", [...GET, ["proxy-connection", "x"]], KIND_REQUEST, /connection-specific/],
  ["transfer-encoding", [...GET, ["transfer-encoding", "chunked"]], KIND_REQUEST, /connection-specific/],
  ["upgrade", [...GET, ["upgrade", "websocket"]], KIND_REQUEST, /connection-specific/],
  ["te: trailers", [...GET, ["te", "trailers"]], KIND_REQUEST, null],
  ["te: gzip", [...GET, ["te", "gzip"]], KIND_REQUEST, /te "gzip"/],
  ["content-length", [...GET, ["content-length", "12"]], KIND_REQUEST, null],
  ["content-length not digits", [...GET, ["content-length", "1,2"]], KIND_REQUEST, /content-length/],
  [
    "content-length twice, differing",
    [...GET, ["content-length", "1"], ["content-length", "2"]],
    KIND_REQUEST,
    /differ/,
  ],
  ["a response", [[":status", "200"], ["x", "1"]], KIND_RESPONSE, null],
  ["101 response", [[":status", "101"]], KIND_RESPONSE, /:status/],
  ["status not 3 digits", [[":status", "20"]], KIND_RESPONSE, /:status/],
  ["no :status", [["x", "1"]], KIND_RESPONSE, /no :status/],
  [":path in a response", [[":status", "200"], [":path", "/"]], KIND_RESPONSE, /in a response/],
  ["trailers", [["grpc-status", "0"]], KIND_TRAILERS, null],
  ["pseudo in trailers", [[":status", "200"]], KIND_TRAILERS, /in trailers/],
];

for (const [name, list, kind, err] of CASES) {
  Deno.test(`headers: ${name}`, () => {
    const check = validateHeaders(list, kind);
    if (err === null) assert.equal(check.error, null);
    else assert.match(check.error ?? "(valid)", err);
  });
}

Deno.test("headers: content-length and :status are returned", () => {
  assert.equal(validateHeaders([...GET, ["content-length", "12"]], KIND_REQUEST).contentLength, 12);
  assert.equal(validateHeaders(GET, KIND_REQUEST).contentLength, -1);
  assert.equal(validateHeaders([[":status", "404"]], KIND_RESPONSE).status, 404);
});
