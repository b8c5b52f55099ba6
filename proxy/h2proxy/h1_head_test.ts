import assert from "node:assert/strict";
import { HeadParser } from "../http/head.ts";
import { RESPONSE } from "../http/http_head.ts";
import { http1RequestHead, http2ResponseHeaders } from "./h1_head.ts";
import { adaptRequestHead, type HeaderList } from "./request_head.ts";

function request(headers: HeaderList, endStream: boolean): { text: string; framing: string } {
  const adapted = adaptRequestHead(headers);
  assert.ok(adapted.ok);
  const r = http1RequestHead(adapted, endStream);
  const bytes = r.head.second === null ? r.head.first : new Uint8Array([...r.head.first, ...r.head.second]);
  return { text: new TextDecoder().decode(bytes), framing: r.framing };
}

const base = (method: string): HeaderList => [
  [":method", method],
  [":scheme", "http"],
  [":authority", "svc.ns:8000"],
  [":path", "/p?q=1"],
];

Deno.test("h1 request head: framing per Envoy's HTTP/1 codec", () => {
  const cases: {
    name: string;
    headers: HeaderList;
    end: boolean;
    framing: string;
    has: RegExp[];
    not: RegExp[];
  }[] = [
    {
      name: "GET without body: no framing field",
      headers: base("GET"),
      end: true,
      framing: "none",
      has: [/^GET \/p\?q=1 HTTP\/1\.1\r\nhost: svc\.ns:8000\r\n/],
      not: [/content-length/, /transfer-encoding/],
    },
    {
      name: "POST without body: content-length 0",
      headers: base("POST"),
      end: true,
      framing: "none",
      has: [/\r\ncontent-length: 0\r\n/],
      not: [/transfer-encoding/],
    },
    {
      name: "POST with content-length: kept, body as is",
      headers: [...base("POST"), ["content-length", "5"]],
      end: false,
      framing: "length",
      has: [/\r\ncontent-length: 5\r\n/],
      not: [/transfer-encoding/],
    },
    {
      name: "POST of unknown length: chunked",
      headers: base("POST"),
      end: false,
      framing: "chunked",
      has: [/\r\ntransfer-encoding: chunked\r\n/],
      not: [/content-length/],
    },
    {
      name: "te: trailers kept, expect: 100-continue dropped, cookies joined",
      headers: [...base("PUT"), ["te", "trailers"], ["expect", "100-continue"], ["cookie", "a=1"], [
        "cookie",
        "b=2",
      ]],
      end: false,
      framing: "chunked",
      has: [/\r\nte: trailers\r\n/, /\r\ncookie: a=1; b=2\r\n/],
      not: [/expect/i],
    },
  ];
  for (const c of cases) {
    const r = request(c.headers, c.end);
    assert.equal(r.framing, c.framing, c.name);
    assert.ok(r.text.endsWith("\r\n\r\n"), c.name);
    for (const re of c.has) assert.match(r.text, re, c.name);
    for (const re of c.not) assert.doesNotMatch(r.text, re, c.name);
  }
});

function response(text: string): HeaderList {
  const p = new HeadParser(RESPONSE);
  const bytes = new TextEncoder().encode(text);
  assert.equal(p.feed(bytes), bytes.length);
  return http2ResponseHeaders(p.head);
}

Deno.test("h1 response head to HTTP/2: no connection-specific field, names lower case", () => {
  const cases: { name: string; head: string; want: HeaderList }[] = [
    {
      name: "Connection, what it nominates, Keep-Alive, Proxy-Connection, Upgrade, TE dropped",
      head: "HTTP/1.1 200 OK\r\nConnection: X-Hop, keep-alive\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n" +
        "Proxy-Connection: close\r\nUpgrade: h2c\r\nTE: trailers\r\nX-End: 2\r\nContent-Length: 3\r\n\r\n",
      want: [[":status", "200"], ["x-end", "2"], ["content-length", "3"]],
    },
    {
      name: "Transfer-Encoding dropped (the body is decoded into DATA)",
      head: "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n",
      want: [[":status", "201"], ["content-type", "text/plain"]],
    },
    {
      name: "a repeated Content-Length sent once",
      head:
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\nSet-Cookie: a\r\nSet-Cookie: b\r\n\r\n",
      want: [[":status", "200"], ["set-cookie", "a"], ["set-cookie", "b"], ["content-length", "4"]],
    },
  ];
  for (const c of cases) assert.deepEqual(response(c.head), c.want, c.name);
});
