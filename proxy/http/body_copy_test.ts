import assert from "node:assert/strict";
import { ascii, latin1 } from "./chars.ts";
import { ChunkedDecoder } from "./chunked.ts";
import { copyChunked, copyLength, copyUntilClose, writeHead } from "./body_copy.ts";
import { copying } from "./socket_test_support.ts";

Deno.test("copyLength copies exactly the length and leaves what follows unread", async () => {
  const c = await copying();
  try {
    c.feed.write("hello");
    c.feed.write(" worldNEXT");
    assert.equal(await copyLength(c.src, c.dst, 11), true);
    assert.equal(await c.received(), "hello world");
    assert.equal(latin1(c.src.read()!, 0, 4), "NEXT");
  } finally {
    c.close();
  }
});

Deno.test("copyLength is false when the source ends first", async () => {
  const c = await copying();
  try {
    c.feed.end("short");
    assert.equal(await copyLength(c.src, c.dst, 100), false);
    assert.equal(await c.received(), "short");
  } finally {
    c.close();
  }
});

Deno.test("copyUntilClose re-chunks for an HTTP/1.1 client and ends with the last chunk", async () => {
  const c = await copying();
  try {
    c.feed.end("abc");
    assert.equal(await copyUntilClose(c.src, c.dst, true), true);
    assert.equal(await c.received(), "3\r\nabc\r\n0\r\n\r\n");
  } finally {
    c.close();
  }
});

Deno.test("copyUntilClose copies as is for an HTTP/1.0 client", async () => {
  const c = await copying();
  try {
    c.feed.end("abc");
    assert.equal(await copyUntilClose(c.src, c.dst, false), true);
    assert.equal(await c.received(), "abc");
  } finally {
    c.close();
  }
});

Deno.test("copyChunked forwards a chunked body as received and stops at its end", async () => {
  const c = await copying();
  try {
    c.feed.write("5\r\nhello\r\n0\r\n\r\nNEXT");
    assert.equal(await copyChunked(c.src, c.dst, new ChunkedDecoder(false, 502), false), true);
    assert.equal(await c.received(), "5\r\nhello\r\n0\r\n\r\n");
    assert.equal(latin1(c.src.read()!, 0, 4), "NEXT");
  } finally {
    c.close();
  }
});

Deno.test("copyChunked decodes for an HTTP/1.0 client", async () => {
  const c = await copying();
  try {
    c.feed.write("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nNEXT");
    assert.equal(await copyChunked(c.src, c.dst, new ChunkedDecoder(true, 502), true), true);
    assert.equal(await c.received(), "hello world");
    assert.equal(latin1(c.src.read()!, 0, 4), "NEXT");
  } finally {
    c.close();
  }
});

Deno.test("copyChunked is false when the body is cut short", async () => {
  const c = await copying();
  try {
    c.feed.end("5\r\nhel");
    assert.equal(await copyChunked(c.src, c.dst, new ChunkedDecoder(false, 502), false), false);
  } finally {
    c.close();
  }
});

Deno.test("writeHead writes one or two buffers, in order", async () => {
  const c = await copying();
  try {
    writeHead(c.dst, { first: ascii("GET / HTTP/1.1\r\n"), second: ascii("host: x\r\n\r\n") });
    writeHead(c.dst, { first: ascii("GET /2 HTTP/1.1\r\nhost: x\r\n\r\n"), second: null });
    assert.equal(await c.received(), "GET / HTTP/1.1\r\nhost: x\r\n\r\nGET /2 HTTP/1.1\r\nhost: x\r\n\r\n");
  } finally {
    c.close();
  }
});
