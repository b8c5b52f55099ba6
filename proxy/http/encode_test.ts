import assert from "node:assert/strict";
import { ascii, latin1 } from "./chars.ts";
import {
  BODY_AS_IS,
  BODY_DECHUNK,
  BODY_NONE,
  BODY_RECHUNK,
  encodeLocalReply,
  encodeRequestHead,
  encodeResponseHead,
  type HeadBytes,
} from "./encode.ts";
import { HeadParser } from "./head.ts";
import { REQUEST, RESPONSE } from "./http_head.ts";

function text(h: HeadBytes): string {
  const a = latin1(h.first, 0, h.first.length);
  return h.second === null ? a : a + latin1(h.second, 0, h.second.length);
}

function req(raw: string, opts: { xfcc?: string | null; upgrade?: boolean } = {}) {
  const p = new HeadParser(REQUEST);
  const bytes = ascii(raw);
  assert.equal(p.feed(bytes), bytes.length);
  return encodeRequestHead(p.head, {
    xfccElement: opts.xfcc ? ascii(opts.xfcc) : null,
    upgrade: opts.upgrade ?? false,
    defaultHost: ascii("127.0.0.1:8080"),
  });
}

function res(
  raw: string,
  opts: { body?: number; keepAlive?: boolean; clientMinor?: number; upgrade?: boolean },
) {
  const p = new HeadParser(RESPONSE);
  const bytes = ascii(raw);
  assert.equal(p.feed(bytes), bytes.length);
  return text(encodeResponseHead(p.head, {
    body: opts.body ?? BODY_AS_IS,
    keepAlive: opts.keepAlive ?? true,
    clientMinor: opts.clientMinor ?? 1,
    upgrade: opts.upgrade ?? false,
  }));
}

Deno.test("a request without hop-by-hop fields is forwarded as received, without a copy", () => {
  const raw = "GET /x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
  const out = req(raw);
  assert.equal(text(out), raw);
  assert.equal(out.second, null);
  assert.equal(out.first.byteOffset, 0, "a view of the received bytes");
});

Deno.test("mutual TLS: the XFCC element is added; the received head is not copied", () => {
  const out = req("GET / HTTP/1.1\r\nHost: a\r\n\r\n", { xfcc: "By=spiffe://td/ns/a/sa/b;Hash=00" });
  assert.equal(
    text(out),
    "GET / HTTP/1.1\r\nHost: a\r\nx-forwarded-client-cert: By=spiffe://td/ns/a/sa/b;Hash=00\r\n\r\n",
  );
  assert.notEqual(out.second, null);
});

Deno.test("mutual TLS: XFCC received is kept and this hop's element appended (APPEND_FORWARD)", () => {
  const out = req(
    "GET / HTTP/1.1\r\nX-Forwarded-Client-Cert: By=one\r\nHost: a\r\nx-forwarded-client-cert: By=two\r\n\r\n",
    { xfcc: "By=three" },
  );
  assert.equal(
    text(out),
    "GET / HTTP/1.1\r\nHost: a\r\nx-forwarded-client-cert: By=one,By=two,By=three\r\n\r\n",
  );
});

Deno.test("plain text: XFCC received is removed", () => {
  const out = req("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Client-Cert: By=forged\r\nX: y\r\n\r\n");
  assert.equal(text(out), "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n");
});

Deno.test("hop-by-hop fields are removed", () => {
  const out = req(
    "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\n" +
      "Proxy-Connection: keep-alive\r\nTE: gzip\r\nUpgrade: websocket\r\nX-Keep: 2\r\n\r\n",
  );
  assert.equal(text(out), "GET / HTTP/1.1\r\nHost: a\r\nX-Keep: 2\r\n\r\n");
});

Deno.test("an upgrade keeps Upgrade and sends connection: upgrade", () => {
  const out = req(
    "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n",
    { upgrade: true },
  );
  assert.equal(
    text(out),
    "GET /ws HTTP/1.1\r\nHost: a\r\nSec-WebSocket-Key: k\r\nconnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
  );
});

Deno.test("HTTP/1.0 is forwarded as HTTP/1.1 with a Host", () => {
  assert.equal(
    text(req("GET /old HTTP/1.0\r\nX: y\r\n\r\n")),
    "GET /old HTTP/1.1\r\nX: y\r\nhost: 127.0.0.1:8080\r\n\r\n",
  );
});

Deno.test("a Content-Length list is forwarded as one canonical value", () => {
  assert.equal(
    text(req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\nContent-Length: 003\r\n\r\n")),
    "POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 3\r\n\r\n",
  );
});

Deno.test("response heads", async (t) => {
  await t.step("hop-by-hop removed, version HTTP/1.1", () => {
    assert.equal(
      res(
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\n",
        {},
      ),
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
    );
  });
  await t.step("closing: connection: close", () => {
    assert.equal(
      res("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", { keepAlive: false }),
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nconnection: close\r\n\r\n",
    );
  });
  await t.step("HTTP/1.0 client kept alive: connection: keep-alive", () => {
    assert.equal(
      res("HTTP/1.1 204 No Content\r\n\r\n", { clientMinor: 0, body: BODY_NONE }),
      "HTTP/1.1 204 No Content\r\nconnection: keep-alive\r\n\r\n",
    );
  });
  await t.step("decoded for HTTP/1.0: no Transfer-Encoding", () => {
    assert.equal(
      res("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX: y\r\n\r\n", {
        body: BODY_DECHUNK,
        clientMinor: 0,
        keepAlive: false,
      }),
      "HTTP/1.1 200 OK\r\nX: y\r\nconnection: close\r\n\r\n",
    );
  });
  await t.step("close-delimited re-chunked for HTTP/1.1", () => {
    assert.equal(
      res("HTTP/1.0 200 OK\r\nX: y\r\n\r\n", { body: BODY_RECHUNK }),
      "HTTP/1.1 200 OK\r\nX: y\r\ntransfer-encoding: chunked\r\n\r\n",
    );
  });
  await t.step("101 keeps Upgrade", () => {
    assert.equal(
      res(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: a\r\n\r\n",
        {
          body: BODY_NONE,
          upgrade: true,
        },
      ),
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: a\r\nconnection: upgrade\r\n\r\n",
    );
  });
});

Deno.test("local replies", () => {
  assert.equal(
    new TextDecoder().decode(encodeLocalReply(431, "Request Header Fields Too Large", true)),
    "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 31\r\ncontent-type: text/plain\r\n" +
      "connection: close\r\n\r\nRequest Header Fields Too Large",
  );
});

Deno.test("host: replaces every received Host (absolute form), and the default Host of HTTP/1.0", () => {
  const encode = (raw: string) => {
    const p = new HeadParser(REQUEST);
    assert.equal(p.feed(ascii(raw)), raw.length);
    return text(encodeRequestHead(p.head, {
      xfccElement: null,
      upgrade: false,
      defaultHost: ascii("127.0.0.1:8080"),
      target: ascii("/p"),
      host: ascii("h.example:81"),
    }));
  };
  assert.equal(
    encode("GET http://h.example:81/p HTTP/1.1\r\nHost: evil\r\nA: b\r\n\r\n"),
    "GET /p HTTP/1.1\r\nA: b\r\nhost: h.example:81\r\n\r\n",
  );
  assert.equal(
    encode("GET http://h.example:81/p HTTP/1.0\r\n\r\n"),
    "GET /p HTTP/1.1\r\nhost: h.example:81\r\n\r\n",
  );
});
