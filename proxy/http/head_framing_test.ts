import assert from "node:assert/strict";
import {
  EXPECT_CONTINUE,
  EXPECT_OTHER,
  H_CONNECTION,
  H_CONTENT_LENGTH,
  H_XFCC,
  type HttpHead,
  REQUEST,
} from "./http_head.ts";
import { parseAll, request } from "./head_test_support.ts";

Deno.test("request heads that parse: framing and connection management", async (t) => {
  const cases: { name: string; text: string; check: (h: HttpHead) => void }[] = [
    {
      name: "HTTP/1.0 with Connection: keep-alive",
      text: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
      check: (h) => {
        assert.equal(h.keepAlive, true);
        assert.equal(h.kinds[0], H_CONNECTION);
        assert.equal(h.drop[0], 1);
      },
    },
    {
      name: "Connection: close",
      text: "GET / HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n",
      check: (h) => assert.equal(h.keepAlive, false),
    },
    {
      name: "Content-Length",
      text: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0042\r\n\r\n",
      check: (h) => {
        assert.equal(h.contentLength, 42);
        assert.equal(h.contentLengthRewrite, true, "leading zeros are canonicalised");
      },
    },
    {
      name: "plain Content-Length is forwarded as received",
      text: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 42\r\n\r\n",
      check: (h) => {
        assert.equal(h.kinds[1], H_CONTENT_LENGTH);
        assert.equal(h.drop[1], 0);
        assert.equal(h.contentLengthRewrite, false);
      },
    },
    {
      name: "Content-Length list of identical values (RFC 9110 8.6)",
      text: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n",
      check: (h) => {
        assert.equal(h.contentLength, 5);
        assert.equal(h.contentLengthRewrite, true);
        assert.equal(h.drop[1], 1);
        assert.equal(h.drop[2], 1);
      },
    },
    {
      name: "Transfer-Encoding: chunked (any case)",
      text: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n",
      check: (h) => {
        assert.equal(h.chunked, true);
        assert.equal(h.contentLength, -1);
      },
    },
    {
      name: "WebSocket upgrade",
      text: "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
      check: (h) => {
        assert.equal(h.upgrade, true);
        assert.equal(h.upgradeField, 2);
      },
    },
    {
      name: "h2c upgrade is ignored",
      text: "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n" +
        "HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
      check: (h) => {
        assert.equal(h.upgrade, false);
        assert.deepEqual([...h.drop.subarray(0, 4)], [0, 1, 1, 1]);
      },
    },
    {
      name: "Upgrade without Connection: upgrade is not an upgrade",
      text: "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n",
      check: (h) => assert.equal(h.upgrade, false),
    },
    {
      name: "hop-by-hop fields and fields nominated by Connection are dropped",
      text: "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: 5\r\n" +
        "Proxy-Connection: x\r\nx-hop: 1\r\nTE: gzip\r\nX-End: y\r\n\r\n",
      check: (h) => assert.deepEqual([...h.drop.subarray(0, 7)], [0, 1, 1, 1, 1, 1, 0]),
    },
    {
      name: "TE: trailers is kept",
      text: "GET / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n",
      check: (h) => assert.equal(h.drop[1], 0),
    },
    {
      name: "Expect: 100-continue",
      text: "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
      check: (h) => assert.equal(h.expect, EXPECT_CONTINUE),
    },
    {
      name: "other expectation",
      text: "PUT / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n",
      check: (h) => assert.equal(h.expect, EXPECT_OTHER),
    },
    {
      name: "X-Forwarded-Client-Cert fields are counted",
      text: "GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-Client-Cert: a\r\nx-forwarded-client-cert: b\r\n\r\n",
      check: (h) => {
        assert.equal(h.xfccCount, 2);
        assert.equal(h.kinds[1], H_XFCC);
      },
    },
  ];
  for (const c of cases) await t.step(c.name, () => c.check(request(c.text)));
});

Deno.test("malformed requests: Host, Content-Length, Transfer-Encoding and Connection", async (t) => {
  const H = "Host: x\r\n";
  const cases: [string, string | Uint8Array, number][] = [
    // Host
    ["missing Host in HTTP/1.1", "GET / HTTP/1.1\r\nX: y\r\n\r\n", 400],
    ["two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400],
    // Content-Length
    [
      "duplicate Content-Length mismatch",
      `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 6\r\n\r\n`,
      400,
    ],
    ["Content-Length list mismatch", `POST / HTTP/1.1\r\n${H}Content-Length: 5, 6\r\n\r\n`, 400],
    ["negative Content-Length", `POST / HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\n`, 400],
    ["signed Content-Length", `POST / HTTP/1.1\r\n${H}Content-Length: +5\r\n\r\n`, 400],
    ["hex Content-Length", `POST / HTTP/1.1\r\n${H}Content-Length: 0x5\r\n\r\n`, 400],
    ["Content-Length with letters", `POST / HTTP/1.1\r\n${H}Content-Length: 5a\r\n\r\n`, 400],
    ["Content-Length with inner space", `POST / HTTP/1.1\r\n${H}Content-Length: 1 2\r\n\r\n`, 400],
    ["empty Content-Length", `POST / HTTP/1.1\r\n${H}Content-Length: \r\n\r\n`, 400],
    ["Content-Length list with empty member", `POST / HTTP/1.1\r\n${H}Content-Length: 5,\r\n\r\n`, 400],
    ["Content-Length above 2^53", `POST / HTTP/1.1\r\n${H}Content-Length: 99999999999999999999\r\n\r\n`, 400],
    // Transfer-Encoding
    [
      "Content-Length with Transfer-Encoding",
      `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n`,
      400,
    ],
    [
      "Transfer-Encoding with Content-Length (other order)",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n`,
      400,
    ],
    ["Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400],
    ["chunked twice", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, chunked\r\n\r\n`, 400],
    [
      "chunked twice over two fields",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n`,
      400,
    ],
    ["chunked not last", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n`, 400],
    ["empty Transfer-Encoding", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: \r\n\r\n`, 400],
    ["garbage Transfer-Encoding", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chun ked\r\n\r\n`, 400],
    [
      "Transfer-Encoding with a separator",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked/1\r\n\r\n`,
      400,
    ],
    ["unknown coding alone", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n`, 501],
    ["unknown coding before chunked", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n`, 501],
    ["identity", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\n\r\n`, 501],
    // Connection
    [
      "Connection nominating Content-Length",
      `POST / HTTP/1.1\r\n${H}Connection: content-length\r\nContent-Length: 1\r\n\r\n`,
      400,
    ],
    ["Connection nominating Host", `GET / HTTP/1.1\r\n${H}Connection: host\r\n\r\n`, 400],
    ["Connection with a separator", `GET / HTTP/1.1\r\n${H}Connection: close;x\r\n\r\n`, 400],
  ];
  for (const [name, text, status] of cases) {
    await t.step(name, () => {
      const r = parseAll(REQUEST, text);
      assert.equal(r.ok, false, `expected ${status}, parsed ${JSON.stringify(r.ok && r.summary)}`);
      assert.equal(r.ok ? 0 : r.status, status, r.ok ? "" : r.message);
    });
  }
});
