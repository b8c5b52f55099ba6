import assert from "node:assert/strict";
import { ascii } from "./chars.ts";
import { findHeadEnd, HeadParser } from "./head.ts";
import { feed, parseAll, request } from "./head_test_support.ts";
import {
  EXPECT_NONE,
  H_HOST,
  HttpError,
  type HttpHead,
  M_CONNECT,
  M_GET,
  M_HEAD,
  M_OPTIONS,
  M_OTHER,
  REQUEST,
  RESPONSE,
} from "./http_head.ts";

Deno.test("request heads that parse: lines, targets and fields", async (t) => {
  const cases: { name: string; text: string; check: (h: HttpHead) => void }[] = [
    {
      name: "simple GET",
      text: "GET /a?b=c HTTP/1.1\r\nHost: example\r\nUser-Agent: curl/7.88\r\n\r\n",
      check: (h) => {
        assert.equal(h.method, M_GET);
        assert.equal(h.targetText(), "/a?b=c");
        assert.equal(h.minor, 1);
        assert.equal(h.count, 2);
        assert.equal(h.kinds[0], H_HOST);
        assert.equal(h.value(1), "curl/7.88");
        assert.equal(h.contentLength, -1);
        assert.equal(h.keepAlive, true);
        assert.equal(h.expect, EXPECT_NONE);
      },
    },
    {
      name: "leading empty lines are skipped (RFC 9112 2.2)",
      text: "\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
      check: (h) => assert.equal(h.method, M_HEAD),
    },
    {
      name: "HTTP/1.0 without Host, not keep-alive by default",
      text: "GET / HTTP/1.0\r\n\r\n",
      check: (h) => {
        assert.equal(h.minor, 0);
        assert.equal(h.hostCount, 0);
        assert.equal(h.keepAlive, false);
      },
    },
    {
      name: "absolute-form target",
      text: "GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
      check: (h) => assert.equal(h.targetText(), "http://example.com/x"),
    },
    {
      name: "OPTIONS *",
      text: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
      check: (h) => assert.equal(h.method, M_OPTIONS),
    },
    {
      name: "CONNECT authority-form (parsed; the forwarder refuses it)",
      text: "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
      check: (h) => assert.equal(h.method, M_CONNECT),
    },
    {
      name: "extension method",
      text: "PROPFIND /dav HTTP/1.1\r\nHost: x\r\n\r\n",
      check: (h) => assert.equal(h.method, M_OTHER),
    },
    {
      name: "values: surrounding whitespace trimmed, inner kept, obs-text allowed, empty allowed",
      text: "GET / HTTP/1.1\r\nHost: x\r\nA: \t v  w \t\r\nB:\r\nC: caf\xe9\r\n\r\n",
      check: (h) => {
        assert.equal(h.value(1), "v  w");
        assert.equal(h.value(2), "");
        assert.equal(h.value(3), "caf\xe9");
      },
    },
    {
      name: "tchar symbols in names",
      text: "GET / HTTP/1.1\r\nHost: x\r\nX-!#$%&'*+.^_`|~: 1\r\n\r\n",
      check: (h) => assert.equal(h.name(1), "X-!#$%&'*+.^_`|~"),
    },
    {
      name: "exactly 100 fields",
      text: "GET / HTTP/1.1\r\nHost: x\r\n" + Array.from({ length: 99 }, (_, i) => `h${i}: v\r\n`).join("") +
        "\r\n",
      check: (h) => assert.equal(h.count, 100),
    },
  ];
  for (const c of cases) await t.step(c.name, () => c.check(request(c.text)));
});

Deno.test("the head ends at the empty line; the rest is body or the next request", () => {
  const text = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n";
  for (const step of [0, 1, 3]) {
    const r = feed(REQUEST, text, step);
    assert.equal(r.end, text.indexOf("hello"));
  }
});

Deno.test("an incomplete head needs more", () => {
  const p = new HeadParser(REQUEST);
  assert.equal(p.feed(ascii("GET / HTTP/1.1\r\nHost: x\r\n")), -1);
  assert.equal(p.started, true);
  assert.equal(p.feed(ascii("\r")), -1);
  assert.equal(p.feed(ascii("\nrest")), 1);
  p.reset();
  assert.equal(p.started, false);
  assert.equal(p.feed(ascii("\r\n")), -1, "empty lines only");
  assert.equal(p.started, false);
});

Deno.test("a parser is reused across messages", () => {
  const p = new HeadParser(REQUEST);
  for (let i = 0; i < 3; i++) {
    p.reset();
    const text = `GET /${i} HTTP/1.1\r\nHost: h${i}\r\n${i === 1 ? "Content-Length: 7\r\n" : ""}\r\n`;
    assert.equal(p.feed(ascii(text)), text.length);
    assert.equal(p.head.targetText(), `/${i}`);
    assert.equal(p.head.contentLength, i === 1 ? 7 : -1);
  }
});

const CLIENT_HELLO = new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);

Deno.test("malformed requests: lines, targets, fields and limits", async (t) => {
  const H = "Host: x\r\n";
  const cases: [string, string | Uint8Array, number][] = [
    // request line
    ["empty method", " / HTTP/1.1\r\n\r\n", 400],
    ["invalid character in method", "GE(T / HTTP/1.1\r\n\r\n", 400],
    ["two spaces after method", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["tab as separator", "GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["missing target", "GET HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["missing version", "GET /\r\nHost: x\r\n\r\n", 400],
    ["extra token after version", "GET / HTTP/1.1 x\r\nHost: x\r\n\r\n", 400],
    ["trailing space after version", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400],
    ["lowercase version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400],
    ["version not digits", "GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400],
    ["version without minor", "GET / HTTP/1\r\nHost: x\r\n\r\n", 400],
    ["bare LF after the request line", "GET / HTTP/1.1\nHost: x\r\n\r\n", 400],
    ["bare CR after the request line", "GET / HTTP/1.1\rHost: x\r\n\r\n", 400],
    ["control character in target", "GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["non-ASCII in target", "GET /caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["DEL in target", "GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["relative target", "GET foo HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["scheme without //", "GET http:/x HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["asterisk for GET", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["CONNECT with a path", "CONNECT example.com:443/x HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    ["HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505],
    ["HTTP/1.2", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505],
    ["HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505],
    ["HTTP/2 prior-knowledge preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505],
    ["TLS ClientHello (rejected at its first byte)", CLIENT_HELLO, 400],
    ["binary garbage", new Uint8Array([0, 1, 2, 3, 13, 10, 13, 10]), 400],
    ["too many empty lines first", "\r\n".repeat(40) + "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400],
    // header names
    ["space in header name", `GET / HTTP/1.1\r\n${H}Bad Header: x\r\n\r\n`, 400],
    ["header line without colon", `GET / HTTP/1.1\r\n${H}BadHeader\r\n\r\n`, 400],
    ["empty header name", `GET / HTTP/1.1\r\n${H}: value\r\n\r\n`, 400],
    ["whitespace before colon", `GET / HTTP/1.1\r\nHost : x\r\n\r\n`, 400],
    ["tab before colon", `GET / HTTP/1.1\r\n${H}X\t: y\r\n\r\n`, 400],
    ["separator in header name", `GET / HTTP/1.1\r\n${H}X(y): z\r\n\r\n`, 400],
    ["slash in header name", `GET / HTTP/1.1\r\n${H}X/y: z\r\n\r\n`, 400],
    ["non-ASCII header name", `GET / HTTP/1.1\r\n${H}X\xe9: z\r\n\r\n`, 400],
    ["NUL in header name", `GET / HTTP/1.1\r\n${H}X\x00: z\r\n\r\n`, 400],
    // line structure
    ["obs-fold (continuation with space)", `GET / HTTP/1.1\r\n${H}X: a\r\n b\r\n\r\n`, 400],
    ["obs-fold (continuation with tab)", `GET / HTTP/1.1\r\n${H}X: a\r\n\tb\r\n\r\n`, 400],
    ["obs-fold right after the request line", "GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400],
    ["bare LF ending a header line", `GET / HTTP/1.1\r\n${H}X: a\n\r\n`, 400],
    ["bare LF ending the head", `GET / HTTP/1.1\r\n${H}\n`, 400],
    ["bare LF line endings throughout", "GET / HTTP/1.1\nHost: x\n\n", 400],
    ["bare CR inside a value", `GET / HTTP/1.1\r\n${H}X: a\rb\r\n\r\n`, 400],
    ["CR CR LF", `GET / HTTP/1.1\r\n${H}X: a\r\r\n\r\n`, 400],
    // header values
    ["NUL in value", `GET / HTTP/1.1\r\n${H}X: a\x00b\r\n\r\n`, 400],
    ["control character in value", `GET / HTTP/1.1\r\n${H}X: a\x1bb\r\n\r\n`, 400],
    ["DEL in value", `GET / HTTP/1.1\r\n${H}X: a\x7fb\r\n\r\n`, 400],
    // limits
    ["101 header fields", "GET / HTTP/1.1\r\n" + "h: v\r\n".repeat(100) + "Host: x\r\n\r\n", 431],
    ["head over 60 KiB", `GET / HTTP/1.1\r\n${H}X: ${"a".repeat(61 * 1024)}\r\n\r\n`, 431],
    [
      "endless head over 60 KiB without an empty line",
      `GET / HTTP/1.1\r\n${H}` + "X: y\r\n".repeat(11000),
      431,
    ],
    ["request line over 60 KiB", `GET /${"a".repeat(61 * 1024)} HTTP/1.1\r\n\r\n`, 431],
  ];
  for (const [name, text, status] of cases) {
    await t.step(name, () => {
      const r = parseAll(REQUEST, text);
      assert.equal(r.ok, false, `expected ${status}, parsed ${JSON.stringify(r.ok && r.summary)}`);
      assert.equal(r.ok ? 0 : r.status, status, r.ok ? "" : r.message);
    });
  }
});

Deno.test("a head of exactly the limit parses; one byte more is 431", () => {
  const limits = { maxHeadBytes: 200, maxHeaders: 100 };
  const base = "GET / HTTP/1.1\r\nHost: x\r\nX: \r\n\r\n";
  const exact = base.replace("X: ", "X: " + "a".repeat(200 - base.length));
  assert.equal(exact.length, 200);
  for (const step of [0, 1, 50]) {
    const p = new HeadParser(REQUEST, limits);
    const bytes = ascii(exact);
    let off = -1;
    for (let i = 0; i < bytes.length && off < 0; i += step || bytes.length) {
      const piece = bytes.subarray(i, i + (step || bytes.length));
      off = p.feed(piece);
    }
    assert.ok(off >= 0, `step ${step}`);
    const q = new HeadParser(REQUEST, limits);
    const over = ascii(exact.replace("X: a", "X: aa"));
    assert.throws(() => {
      for (let i = 0; i < over.length; i += step || over.length) {
        q.feed(over.subarray(i, i + (step || over.length)));
      }
    }, (e: unknown) => e instanceof HttpError && e.status === 431);
  }
});

Deno.test("the first bytes are checked before the head is complete", () => {
  const p = new HeadParser(REQUEST);
  assert.throws(
    () => p.feed(CLIENT_HELLO.subarray(0, 1)),
    (e: unknown) => e instanceof HttpError && e.status === 400,
  );
  const q = new HeadParser(REQUEST);
  assert.equal(q.feed(ascii("GET")), -1);
  assert.equal(q.feed(ascii(" /x")), -1);
  const r = new HeadParser(REQUEST);
  assert.equal(r.feed(ascii("GE")), -1);
  assert.throws(() => r.feed(ascii("T\x01")), HttpError);
});

Deno.test("response heads", async (t) => {
  const ok: { name: string; text: string; check: (h: HttpHead) => void }[] = [
    {
      name: "200 with Content-Length",
      text: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n",
      check: (h) => {
        assert.equal(h.status, 200);
        assert.equal(h.contentLength, 5);
        assert.equal(h.keepAlive, true);
      },
    },
    {
      name: "no reason phrase",
      text: "HTTP/1.1 204\r\n\r\n",
      check: (h) => assert.equal(h.status, 204),
    },
    {
      name: "empty reason phrase",
      text: "HTTP/1.1 404 \r\n\r\n",
      check: (h) => assert.equal(h.status, 404),
    },
    {
      name: "HTTP/1.0 response closes unless keep-alive",
      text: "HTTP/1.0 200 OK\r\n\r\n",
      check: (h) => {
        assert.equal(h.minor, 0);
        assert.equal(h.keepAlive, false);
        assert.equal(h.contentLength, -1);
      },
    },
    {
      name: "Transfer-Encoding wins over Content-Length (RFC 9112 6.3)",
      text: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      check: (h) => {
        assert.equal(h.chunked, true);
        assert.equal(h.contentLength, -1);
        assert.equal(h.drop[0], 1);
      },
    },
    {
      name: "gzip without chunked: delimited by close",
      text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      check: (h) => {
        assert.equal(h.hasTransferEncoding, true);
        assert.equal(h.chunked, false);
      },
    },
    {
      name: "101 Switching Protocols",
      text: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
      check: (h) => {
        assert.equal(h.status, 101);
        assert.equal(h.upgrade, true);
      },
    },
  ];
  for (const c of ok) {
    await t.step(c.name, () => {
      const r = parseAll(RESPONSE, c.text);
      assert.ok(r.ok && r.head, r.ok ? "incomplete" : r.message);
      c.check(r.head!);
    });
  }
  const bad: [string, string][] = [
    ["not HTTP", "ICY 200 OK\r\n\r\n"],
    ["two-digit status", "HTTP/1.1 20 OK\r\n\r\n"],
    ["status 099", "HTTP/1.1 099 X\r\n\r\n"],
    ["status with letters", "HTTP/1.1 2x0 OK\r\n\r\n"],
    ["HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n"],
    ["control character in reason", "HTTP/1.1 200 O\x01K\r\n\r\n"],
    ["obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"],
    ["conflicting Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"],
    ["invalid Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"],
    ["chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"],
    ["101 header fields", "HTTP/1.1 200 OK\r\n" + "h: v\r\n".repeat(101) + "\r\n"],
  ];
  for (const [name, text] of bad) {
    await t.step(`malformed: ${name} → 502`, () => {
      const r = parseAll(RESPONSE, text);
      assert.equal(r.ok, false);
      assert.equal(r.ok ? 0 : r.status, 502);
    });
  }
});

Deno.test("findHeadEnd", () => {
  const cases: [string, number][] = [
    ["a\r\n\r\n", 5],
    ["a\r\nb\r\n\r\nbody", 8],
    ["a\n\n", 3],
    ["a\r\n\n", 4],
    ["a\r\n\r", -1],
    ["a\r\n", -1],
    ["", -1],
  ];
  for (const [text, end] of cases) {
    assert.equal(findHeadEnd(ascii(text), 0, text.length), end, JSON.stringify(text));
  }
  // The end bound is respected even when the buffer continues.
  const b = ascii("a\r\n\r\n");
  assert.equal(findHeadEnd(b, 0, 4), -1);
});
