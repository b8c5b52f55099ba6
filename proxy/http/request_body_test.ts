import assert from "node:assert/strict";
import { ascii, latin1 } from "./chars.ts";
import type { HeadBytes } from "./encode.ts";
import {
  B_CHUNKED,
  B_LENGTH,
  PUMP_BAD,
  PUMP_CANCELLED,
  PUMP_DOWN_FAILED,
  PUMP_OK,
  PUMP_RUNNING,
  RequestBodyPump,
} from "./request_body.ts";
import { copying } from "./socket_test_support.ts";

Deno.test("a Content-Length body is copied whole, reported complete, and what follows stays unread", async () => {
  const c = await copying();
  try {
    let completed = 0;
    const pump = new RequestBodyPump(c.src, () => completed++);
    c.feed.write("hello worldGET /next");
    pump.state = PUMP_RUNNING;
    await pump.run(c.dst, B_LENGTH, 11);
    assert.equal(pump.state, PUMP_OK);
    assert.equal(completed, 1);
    assert.equal(await c.received(), "hello world");
    assert.equal(latin1(c.src.read()!, 0, 9), "GET /next");
  } finally {
    c.close();
  }
});

Deno.test("a chunked body is copied as received up to its last chunk", async () => {
  const c = await copying();
  try {
    const pump = new RequestBodyPump(c.src, () => {});
    c.feed.write("3\r\nabc\r\n0\r\n\r\nNEXT");
    pump.state = PUMP_RUNNING;
    await pump.run(c.dst, B_CHUNKED, 0);
    assert.equal(pump.state, PUMP_OK);
    assert.equal(await c.received(), "3\r\nabc\r\n0\r\n\r\n");
    assert.equal(latin1(c.src.read()!, 0, 4), "NEXT");
  } finally {
    c.close();
  }
});

Deno.test("a malformed chunked body stops the copy with a 400 and resets the upstream connection", async () => {
  const c = await copying();
  try {
    let completed = 0;
    const pump = new RequestBodyPump(c.src, () => completed++);
    c.feed.write("zz\r\nabc\r\n0\r\n\r\n");
    pump.state = PUMP_RUNNING;
    await pump.run(c.dst, B_CHUNKED, 0);
    assert.equal(pump.state, PUMP_BAD);
    assert.equal(pump.error?.status, 400);
    assert.equal(completed, 0);
    assert.equal(c.dst.socket.destroyed, true);
  } finally {
    c.close();
  }
});

Deno.test("the client leaving mid-body is PUMP_DOWN_FAILED, never complete", async () => {
  const c = await copying();
  try {
    let completed = 0;
    const pump = new RequestBodyPump(c.src, () => completed++);
    c.feed.end("only part");
    pump.state = PUMP_RUNNING;
    await pump.run(c.dst, B_LENGTH, 100);
    assert.equal(pump.state, PUMP_DOWN_FAILED);
    assert.equal(completed, 0);
  } finally {
    c.close();
  }
});

Deno.test("stop cancels a copy that waits for the client", async () => {
  const c = await copying();
  try {
    const pump = new RequestBodyPump(c.src, () => {});
    c.feed.write("part");
    pump.state = PUMP_RUNNING;
    const done = pump.run(c.dst, B_LENGTH, 100);
    await new Promise((r) => setTimeout(r, 50));
    await pump.stop(done);
    assert.equal(pump.state, PUMP_CANCELLED);
    assert.equal(await c.received(), "part");
  } finally {
    c.close();
  }
});

/** A head split as the encoder returns it: the received bytes and the proxy's additions. */
const head = (): HeadBytes => ({ first: ascii("POST / HTTP/1.1\r\n"), second: ascii("x-added: 1\r\n\r\n") });

Deno.test("start: a Content-Length body that arrived with the head goes in the head's write, complete at once", async () => {
  const c = await copying();
  try {
    let completed = 0;
    const pump = new RequestBodyPump(c.src, () => completed++);
    c.feed.write("hello worldGET /next");
    await c.src.wait();
    const writes: number[] = [];
    const write = c.dst.write.bind(c.dst);
    c.dst.write = (chunk) => (writes.push(chunk.length), write(chunk));
    pump.state = PUMP_RUNNING;
    assert.equal(pump.start(c.dst, head(), B_LENGTH, 11), null);
    assert.equal(pump.state, PUMP_OK);
    assert.equal(completed, 1);
    assert.deepEqual(writes, [17 + 14 + 11], "one write: head, additions and body");
    assert.equal(await c.received(), "POST / HTTP/1.1\r\nx-added: 1\r\n\r\nhello world");
    assert.equal(latin1(c.src.read()!, 0, 9), "GET /next");
  } finally {
    c.close();
  }
});

Deno.test("start: the rest of a body longer than what arrived is copied after the joined write", async () => {
  const c = await copying();
  try {
    const pump = new RequestBodyPump(c.src, () => {});
    c.feed.write("hello");
    await c.src.wait();
    pump.state = PUMP_RUNNING;
    const done = pump.start(c.dst, head(), B_LENGTH, 11);
    assert.notEqual(done, null);
    c.feed.write(" world");
    await done;
    assert.equal(pump.state, PUMP_OK);
    assert.equal(await c.received(), "POST / HTTP/1.1\r\nx-added: 1\r\n\r\nhello world");
  } finally {
    c.close();
  }
});

Deno.test("start: a chunked body follows its head corked, checked as before", async () => {
  const c = await copying();
  try {
    const pump = new RequestBodyPump(c.src, () => {});
    c.feed.write("3\r\nabc\r\n0\r\n\r\n");
    await c.src.wait();
    pump.state = PUMP_RUNNING;
    await pump.start(c.dst, head(), B_CHUNKED, 0);
    assert.equal(pump.state, PUMP_OK);
    assert.equal(await c.received(), "POST / HTTP/1.1\r\nx-added: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  } finally {
    c.close();
  }
});
