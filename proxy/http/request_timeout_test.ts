/**
 * The request timeout (`--requestTimeout`, Envoy's `request_timeout`) with raw sockets on the
 * inbound and outbound listeners in front of a real Deno application: a body trickled past the
 * timeout (bytes keep flowing, so the idle timeout never ends it) gets 408 `request timeout` and the
 * connection closes, and the application's request is reset so it stops waiting for the body; a fast
 * client on the same listener is served meanwhile; a body completed in time is not cut, nor is its
 * keep-alive connection afterwards.
 */
import assert from "node:assert/strict";
import { RawConn } from "../inbound/test_support.ts";
import { closedAfter, MARGIN_MS, sleep, withListener } from "./limits_test_support.ts";

const REQUEST_MS = 1500;
/** How long a closing connection keeps reading a client that does not close (SocketIo.lingerClose). */
const LINGER_MS = 2000;

/** A client that keeps its side open after the proxy's FIN (an attacker has no reason to close). */
function halfOpen(port: number): Promise<RawConn> {
  return RawConn.plain(port, { allowHalfOpen: true });
}
const LIMITS = { requestHeadersTimeoutMs: 10_000, requestTimeoutMs: REQUEST_MS, idleTimeoutMs: 30_000 };

for (const kind of ["inbound", "outbound"] as const) {
  Deno.test(`${kind}: a body trickled past the request timeout gets 408 and its upload is reset; a fast client is served`, async () => {
    await withListener(kind, LIMITS, async (p, app) => {
      const fast = await RawConn.plain(p.port);
      const slow = await halfOpen(p.port);
      const start = Date.now();
      slow.write(`POST /upload HTTP/1.1\r\nHost: ${p.host}\r\nContent-Length: 1000\r\n\r\n`);
      let trickling = true;
      const trickle = (async () => {
        while (trickling && !slow.ended) {
          slow.write("0123456789");
          await sleep(100);
        }
      })();
      let served = 0;
      while (Date.now() - start < REQUEST_MS + 200) {
        fast.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
        assert.equal((await fast.response()).status, 200);
        served++;
        await sleep(50);
      }
      const reply = await slow.response({ timeoutMs: REQUEST_MS + MARGIN_MS });
      const replyAfter = Date.now() - start;
      // The application's request is reset at once, not when the client finally closes: it stops
      // waiting for the other bytes of the body (a gunicorn thread is free again).
      while (app.uploadsCut === 0 && Date.now() - start < replyAfter + LINGER_MS) await sleep(20);
      const cutAfter = Date.now() - start;
      const slowAfter = await closedAfter(slow, start, REQUEST_MS + LINGER_MS + 2 * MARGIN_MS);
      trickling = false;
      await trickle;
      assert.equal(reply.status, 408);
      assert.equal(reply.body, "request timeout");
      assert.equal(reply.headers["connection"], "close");
      assert.ok(replyAfter >= REQUEST_MS - 50, `408 after ${replyAfter} ms`);
      assert.equal(app.uploadsCut, 1, "the application saw its upload cut");
      assert.ok(
        cutAfter - replyAfter < LINGER_MS / 2,
        `upload cut ${cutAfter - replyAfter} ms after the 408`,
      );
      assert.ok(slowAfter >= replyAfter, `slow connection closed after ${slowAfter} ms`);
      assert.ok(served >= 5, `fast client served ${served} times`);
      fast.write(`GET /headers HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
      assert.equal((await fast.response()).status, 200, "the fast client's connection is still open");
      assert.equal(p.counters.downstream_rq_timeout, 1);
      assert.equal(p.counters.downstream_rq_header_timeout, 0);
      assert.equal(p.counters.downstream_cx_idle_timeout, 0);
      fast.close();
      slow.close();
    });
  });

  Deno.test(`${kind}: a body completed within the request timeout is served, and the timer stops with it`, async () => {
    await withListener(kind, LIMITS, async (p, app) => {
      const c = await RawConn.plain(p.port);
      c.write(`POST /upload HTTP/1.1\r\nHost: ${p.host}\r\nContent-Length: 100\r\n\r\n`);
      for (let i = 0; i < 5; i++) {
        await sleep(100);
        c.write("x".repeat(20));
      }
      const r = await c.response({ timeoutMs: REQUEST_MS });
      assert.equal(r.status, 200);
      assert.equal(r.body, "100");
      // Kept alive past the timeout: no timer runs between requests.
      await sleep(REQUEST_MS + 500);
      assert.equal(c.ended, false, "the keep-alive connection is left open");
      c.write(`POST /upload HTTP/1.1\r\nHost: ${p.host}\r\nContent-Length: 3\r\n\r\nabc`);
      assert.equal((await c.response()).body, "3");
      assert.equal(p.counters.downstream_rq_timeout, 0);
      assert.equal(app.uploadsCut, 0);
      c.close();
    });
  });
}
