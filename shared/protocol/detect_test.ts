import assert from "node:assert/strict";
import { DETECT_MAX_BYTES, type DetectedProtocol, detectProtocol } from "./detect.ts";

const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/** A real ClientHello's first bytes: handshake record, TLS 1.0 record version, length, type 1. */
const HELLO = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];

const CASES: [string, string | number[], DetectedProtocol][] = [
  ["nothing yet", "", "more"],
  ["HTTP/1.1 GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "http1"],
  ["HTTP/1.0 request line only", "GET /x?y=1 HTTP/1.0\r\n", "http1"],
  ["extension method (a token)", "PURGE /cache HTTP/1.1\r\n", "http1"],
  ["absolute-form target", "GET http://a.b/c HTTP/1.1\r\n", "http1"],
  ["method only", "GET", "more"],
  ["method and space", "GET ", "more"],
  ["target not ended", "GET /index.ht", "more"],
  ["version half", "POST /a HTTP/1.", "more"],
  ["version without CRLF", "POST /a HTTP/1.1", "more"],
  ["version then CR", "POST /a HTTP/1.1\r", "more"],
  ["HTTP/2.0 request line (no preface)", "GET / HTTP/2.0\r\n", "tcp"],
  ["HTTP/0.9 style (no version)", "GET /\r\n", "tcp"],
  ["bare LF after version", "GET / HTTP/1.1\n", "tcp"],
  ["two spaces after method", "GET  / HTTP/1.1\r\n", "tcp"],
  ["lowercase version", "GET / http/1.1\r\n", "tcp"],
  ["space first", " GET / HTTP/1.1\r\n", "tcp"],
  ["non-token in method", "GE(T / HTTP/1.1\r\n", "tcp"],
  ["control byte in target", "GET /\x01 HTTP/1.1\r\n", "tcp"],
  ["redis inline command", "PING\r\n", "tcp"],
  ["redis RESP", "*1\r\n$4\r\nPING\r\n", "tcp"],
  ["tcp-echo text", "hello world\n", "tcp"],
  ["full HTTP/2 preface", PREFACE, "http2"],
  ["preface and a SETTINGS frame", PREFACE + "\x00\x00\x00\x04\x00\x00\x00\x00\x00", "http2"],
  ["preface, first 3 bytes", "PRI", "more"],
  ["preface up to its request line", "PRI * HTTP/2.0\r\n", "more"],
  ["preface, 23 bytes", PREFACE.slice(0, 23), "more"],
  ["preface with a wrong tail", "PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n", "tcp"],
  ["ClientHello", HELLO, "tls"],
  ["ClientHello, TLS 1.2 record version", [0x16, 0x03, 0x03, 0x00, 0x40, 0x01], "tls"],
  ["handshake byte only", [0x16], "more"],
  ["handshake record header only", [0x16, 0x03, 0x01, 0x02, 0x00], "more"],
  ["record version 3.5", [0x16, 0x03, 0x05, 0x00, 0x40, 0x01], "tcp"],
  ["record version major 2", [0x16, 0x02, 0x01, 0x00, 0x40, 0x01], "tcp"],
  ["zero record length", [0x16, 0x03, 0x01, 0x00, 0x00, 0x01], "tcp"],
  ["ServerHello, not a ClientHello", [0x16, 0x03, 0x03, 0x00, 0x40, 0x02], "tcp"],
  ["TLS alert record", [0x15, 0x03, 0x03, 0x00, 0x02], "tcp"],
  ["binary zero", [0x00], "tcp"],
  ["MySQL-like binary greeting", [0x4a, 0x00, 0x00, 0x00, 0x0a], "tcp"],
];

Deno.test("detectProtocol: table", () => {
  for (const [name, input, want] of CASES) {
    const bytes = typeof input === "string" ? new TextEncoder().encode(input) : new Uint8Array(input);
    assert.equal(detectProtocol(bytes), want, name);
  }
});

Deno.test("detectProtocol: every prefix of a request line is 'more', then 'http1'", () => {
  const line = new TextEncoder().encode("OPTIONS * HTTP/1.1\r\n");
  for (let n = 0; n < line.length; n++) {
    assert.equal(detectProtocol(line.subarray(0, n)), "more", `${n} bytes`);
  }
  assert.equal(detectProtocol(line), "http1");
});

Deno.test("detectProtocol: every prefix of the HTTP/2 preface is 'more'", () => {
  const preface = new TextEncoder().encode(PREFACE);
  for (let n = 0; n < preface.length; n++) {
    assert.equal(detectProtocol(preface.subarray(0, n)), "more", `${n} bytes`);
  }
});

Deno.test("detectProtocol: a request line that never ends is TCP at the byte limit", () => {
  const head = new TextEncoder().encode("GET /");
  const long = new Uint8Array(DETECT_MAX_BYTES).fill(0x61);
  long.set(head);
  assert.equal(detectProtocol(long.subarray(0, DETECT_MAX_BYTES - 1)), "more");
  assert.equal(detectProtocol(long), "tcp");
});
