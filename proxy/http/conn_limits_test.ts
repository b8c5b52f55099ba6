/**
 * The limits against slow or greedy clients, with raw sockets, on the inbound listener (plain text,
 * PERMISSIVE) and on the outbound listener (redirected form, a plain-text service), each in front
 * of a real Deno application: a trickled head gets 408 within the request-headers timeout while a
 * fast client on the same listener keeps being served; the headers timer does not run between
 * requests; idle connections close; the connection after the limit is closed at once.
 */
import assert from "node:assert/strict";
import type { InboundStats } from "../inbound/observer.ts";
import { RawConn, TestApp } from "../inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import {
  ConnectionClock,
  ConnectionSlots,
  HEADERS_TIMED_OUT,
  IDLE_TIMED_OUT,
  KEEP,
  LIMIT_COUNTERS,
  limitKindOf,
  newConnectionCounter,
  releaseWorker,
  REQUEST_TIMED_OUT,
  sweepIntervalMs,
} from "./conn_limits.ts";
import { closedAfter, inboundListener, MARGIN_MS, sleep, withListener } from "./limits_test_support.ts";

const HEADERS_MS = 1000;

for (const kind of ["inbound", "outbound"] as const) {
  Deno.test(
    `${kind}: a trickled head gets 408 within the headers timeout, a silent connection is closed, a fast client is served`,
    async () => {
      await withListener(kind, { requestHeadersTimeoutMs: HEADERS_MS, idleTimeoutMs: 30_000 }, async (p) => {
        const start = Date.now();
        const slow = await RawConn.plain(p.port);
        const silent = await RawConn.plain(p.port);
        const fast = await RawConn.plain(p.port);
        slow.write("GET /headers HTTP/1.1\r\n");
        let trickling = true;
        const trickle = (async () => {
          for (let i = 0; trickling && !slow.ended; i++) {
            slow.write(`x-slow-${i}: 1\r\n`);
            await sleep(150);
          }
        })();
        // The fast client keeps being served on a keep-alive connection while the slow ones wait.
        let served = 0;
        while (Date.now() - start < HEADERS_MS + 200) {
          fast.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
          assert.equal((await fast.response()).status, 200);
          served++;
          await sleep(50);
        }
        const reply = await slow.response({ timeoutMs: HEADERS_MS + MARGIN_MS });
        const slowAfter = await closedAfter(slow, start, HEADERS_MS + MARGIN_MS);
        const silentAfter = await closedAfter(silent, start, HEADERS_MS + MARGIN_MS);
        trickling = false;
        await trickle;
        assert.equal(reply.status, 408);
        assert.equal(reply.body, "request header timeout");
        assert.ok(slowAfter >= HEADERS_MS - 50 && slowAfter >= 0, `slow head closed after ${slowAfter} ms`);
        assert.ok(silentAfter >= HEADERS_MS - 50, `silent connection closed after ${silentAfter} ms`);
        assert.ok(served >= 5, `fast client served ${served} times`);
        fast.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
        assert.equal((await fast.response()).status, 200, "the fast client's connection is still open");
        for (const c of [slow, silent, fast]) c.close();
        assert.equal(p.counters.downstream_rq_header_timeout, 2);
      });
    },
  );

  Deno.test(
    `${kind}: the headers timer does not run between requests; a later head has it from its first byte`,
    async () => {
      await withListener(kind, { requestHeadersTimeoutMs: HEADERS_MS, idleTimeoutMs: 30_000 }, async (p) => {
        const c = await RawConn.plain(p.port);
        c.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
        assert.equal((await c.response()).status, 200);
        await sleep(HEADERS_MS + 500);
        assert.equal(c.ended, false, "an idle keep-alive connection is left to the idle timeout");
        c.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
        assert.equal((await c.response()).status, 200);
        const began = Date.now();
        c.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n`);
        assert.equal((await c.response({ timeoutMs: HEADERS_MS + MARGIN_MS })).status, 408);
        const after = await closedAfter(c, began, HEADERS_MS + MARGIN_MS);
        assert.ok(after >= HEADERS_MS - 50, `closed ${after} ms after the head began`);
        c.close();
      });
    },
  );

  Deno.test(`${kind}: idle connections close, between requests and inside a stalled body`, async () => {
    const IDLE_MS = 1000;
    await withListener(kind, { requestHeadersTimeoutMs: 10_000, idleTimeoutMs: IDLE_MS }, async (p) => {
      const idle = await RawConn.plain(p.port);
      idle.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
      assert.equal((await idle.response()).status, 200);
      const idleSince = Date.now();
      const stalled = await RawConn.plain(p.port);
      stalled.write(`POST /upload HTTP/1.1\r\nHost: ${p.host}\r\nContent-Length: 100\r\n\r\nabc`);
      const stalledSince = Date.now();
      const [a, b] = await Promise.all([
        closedAfter(idle, idleSince, IDLE_MS + MARGIN_MS),
        closedAfter(stalled, stalledSince, IDLE_MS + MARGIN_MS),
      ]);
      assert.ok(a >= IDLE_MS - 50, `idle keep-alive connection closed after ${a} ms`);
      assert.ok(b >= IDLE_MS - 50, `stalled body closed after ${b} ms`);
      idle.close();
      stalled.close();
      assert.equal(p.counters.downstream_cx_idle_timeout, 2);
    });
  });

  Deno.test(`${kind}: beyond maxConnections a new connection is closed at once and counted`, async () => {
    await withListener(kind, { maxConnections: 2 }, async (p) => {
      const get = `GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`;
      const [a, b] = [await RawConn.plain(p.port), await RawConn.plain(p.port)];
      for (const c of [a, b]) {
        c.write(get);
        assert.equal((await c.response()).status, 200);
      }
      const third = await RawConn.plain(p.port);
      third.write(get);
      assert.equal(await third.closed(1000), true, "the third connection is closed");
      await assert.rejects(() => third.response({ timeoutMs: 100 }), "and gets no response");
      assert.equal(p.counters.downstream_cx_overflow, 1);
      a.close();
      await sleep(100);
      const next = await RawConn.plain(p.port);
      next.write(get);
      assert.equal((await next.response()).status, 200, "a slot freed by a close is taken again");
      b.write(get);
      assert.equal((await b.response()).status, 200, "open connections are not disturbed");
      for (const c of [b, third, next]) c.close();
    });
  });
}

Deno.test("maxConnections bounds a listener across its copies: two listeners on one port share a counter", async () => {
  const app = new TestApp();
  const counter = newConnectionCounter(2);
  const port = freePort();
  const copies = [0, 1].map((worker) =>
    inboundListener(app, { maxConnections: 4 }, {
      port,
      reusePort: true,
      connectionCounter: { buffer: counter, worker },
    })
  );
  await Promise.all(copies.map((l) => l.start()));
  try {
    const open: RawConn[] = [];
    for (let i = 0; i < 12; i++) {
      const c = await RawConn.plain(port);
      c.write("GET /headers HTTP/1.1\r\nHost: app\r\n\r\n");
      open.push(c);
    }
    const statuses = await Promise.all(
      open.map((c) => c.response({ timeoutMs: 2000 }).then((r) => r.status, () => 0)),
    );
    assert.equal(statuses.filter((s) => s === 200).length, 4, `statuses ${statuses}`);
    const overflow = copies.map((l) => (l.observer as InboundStats).counters.downstream_cx_overflow);
    assert.equal(overflow[0] + overflow[1], 8);
    assert.equal(new ConnectionSlots(4, { buffer: counter, worker: 0 }).count, 4);
    for (const c of open) c.close();
  } finally {
    await Promise.all(copies.map((l) => l.close()));
    await app.stop();
  }
});

Deno.test("connection slots: one total for the workers, and a dead worker's share taken off it", () => {
  const buffer = newConnectionCounter(2);
  const w0 = new ConnectionSlots(3, { buffer, worker: 0 });
  const w1 = new ConnectionSlots(3, { buffer, worker: 1 });
  assert.deepEqual([w0.acquire(), w0.acquire(), w1.acquire(), w1.acquire()], [true, true, true, false]);
  assert.equal(w0.count, 3);
  releaseWorker(buffer, 0);
  assert.equal(w1.count, 1, "worker 0 died with its 2 connections");
  assert.deepEqual([w1.acquire(), w1.acquire(), w1.acquire()], [true, true, false]);
  w1.release();
  assert.equal(w1.count, 2);
  assert.throws(() => new ConnectionSlots(3, { buffer, worker: 2 }), RangeError);
  const unlimited = new ConnectionSlots(0);
  for (let i = 0; i < 100; i++) assert.equal(unlimited.acquire(), true);
  assert.equal(unlimited.count, 100);
});

Deno.test("the connection clock: first head from the accept, later heads from their first byte, idle from the last byte", () => {
  const limits = { requestHeadersTimeoutMs: 10, requestTimeoutMs: 0, idleTimeoutMs: 100, maxConnections: 0 };
  const io = { bytesIn: 0, dataAt: 0, bytesOut: 0 };
  const waiting = (since: number, heads: number) => ({ waitingSince: since, heads, requestSince: 0 });
  const clock = new ConnectionClock(1000);
  // Before the connection is served (first byte, TLS handshake): the headers timeout from the accept.
  assert.equal(clock.check(1009, null, null, limits), KEEP);
  assert.equal(clock.check(1010, null, null, limits), HEADERS_TIMED_OUT);
  assert.equal(clock.check(1010, io, waiting(1000, 0), limits), HEADERS_TIMED_OUT);
  // After a first request: waiting with no byte of the next head is idle, not a headers timeout.
  io.bytesIn = 50;
  assert.equal(clock.check(1020, io, waiting(1020, 1), limits), KEEP);
  assert.equal(clock.check(1119, io, waiting(1020, 1), limits), KEEP);
  assert.equal(clock.check(1120, io, waiting(1020, 1), limits), IDLE_TIMED_OUT);
  io.bytesIn = 51;
  io.dataAt = 1121;
  assert.equal(clock.check(1121, io, waiting(1020, 1), limits), KEEP);
  assert.equal(clock.check(1131, io, waiting(1020, 1), limits), HEADERS_TIMED_OUT);
  // Before the session starts with the headers timeout off, the idle timeout runs from the accept.
  const noHeaders = { ...limits, requestHeadersTimeoutMs: 0 };
  assert.equal(new ConnectionClock(1000).check(1099, null, null, noHeaders), KEEP);
  assert.equal(new ConnectionClock(1000).check(1100, null, null, noHeaders), IDLE_TIMED_OUT);
  // Disabled timeouts never fire.
  const off = { requestHeadersTimeoutMs: 0, requestTimeoutMs: 0, idleTimeoutMs: 0, maxConnections: 0 };
  assert.equal(clock.check(1e9, io, { waitingSince: 1, heads: 0, requestSince: 1 }, off), KEEP);
  assert.equal(sweepIntervalMs(off), 1000);
  assert.equal(sweepIntervalMs({ ...off, requestHeadersTimeoutMs: 1000 }), 250);
  assert.equal(sweepIntervalMs({ ...off, requestTimeoutMs: 2000 }), 500);
  assert.equal(sweepIntervalMs({ ...off, idleTimeoutMs: 100 }), 100);
});

Deno.test("the connection clock: the request timeout from the head's first byte while the body comes, not after the response began", () => {
  const limits = { requestHeadersTimeoutMs: 0, requestTimeoutMs: 50, idleTimeoutMs: 0, maxConnections: 0 };
  const clock = new ConnectionClock(1000);
  // A head that began at 1010 and is still coming: the request timeout covers the head as well.
  const io = { bytesIn: 10, dataAt: 1010, bytesOut: 0 };
  assert.equal(clock.check(1059, io, { waitingSince: 1000, heads: 0, requestSince: 0 }, limits), KEEP);
  assert.equal(
    clock.check(1060, io, { waitingSince: 1000, heads: 0, requestSince: 0 }, limits),
    REQUEST_TIMED_OUT,
  );
  // Its body still coming (bytes keep flowing, so no idle timeout would ever end it).
  const body = { waitingSince: 0, heads: 1, requestSince: 1010 };
  io.bytesIn = 20;
  assert.equal(clock.check(1059, io, body, limits), KEEP);
  io.bytesIn = 30;
  assert.equal(clock.check(1060, io, body, limits), REQUEST_TIMED_OUT);
  // Body complete or response begun (the session clears requestSince): never.
  assert.equal(clock.check(1e9, io, { ...body, requestSince: 0 }, limits), KEEP);
  // Off, the default.
  assert.equal(clock.check(1e9, io, body, { ...limits, requestTimeoutMs: 0 }), KEEP);
  assert.equal(limitKindOf(REQUEST_TIMED_OUT), "request_timeout");
  assert.equal(LIMIT_COUNTERS[limitKindOf(REQUEST_TIMED_OUT)], "downstream_rq_timeout");
});
