/**
 * Upstream edge cases through the inbound listener, with a scripted TCP application (node:net):
 * a reused connection that the application closed (retried), resets before and during a response,
 * malformed responses, close-delimited and HTTP/1.0 responses, interim responses, and an application
 * that answers before reading the request body.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import { RawConn, RecordingLog, snapshotOf } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

/** Handles one request head (text up to the empty line) on an application connection. */
type Script = (sock: net.Socket, head: string, nth: { conn: number; request: number }) => void;

/** A TCP application that calls `script` for each request head it reads (bodies are not read). */
async function withScriptedApp(
  script: Script,
  fn: (ctx: { port: number; stats: InboundStats; conns: () => number }) => Promise<void>,
): Promise<void> {
  let conns = 0;
  const sockets = new Set<net.Socket>();
  const app = net.createServer((sock) => {
    const conn = ++conns;
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    let buf = "";
    let request = 0;
    sock.on("data", (d: Uint8Array) => {
      buf += new TextDecoder("latin1").decode(d);
      let end: number;
      while ((end = buf.indexOf("\r\n\r\n")) >= 0) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        script(sock, head, { conn, request: ++request });
      }
    });
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", () => resolve()));
  const appPort = (app.address() as net.AddressInfo).port;
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort,
    snapshot: () => snapshotOf("DISABLE", undefined),
    log: new RecordingLog(),
  });
  await listener.start();
  try {
    await fn({ port: listener.port, stats: listener.observer as InboundStats, conns: () => conns });
  } finally {
    await listener.close();
    for (const s of sockets) s.destroy();
    await within(
      new Promise<void>((resolve) => app.close(() => resolve())),
      5000,
      "the application server closed",
    );
  }
}

const OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

Deno.test("a reused connection the application closed instead of answering: retried on a new one", async () => {
  await withScriptedApp(
    (sock, _head, n) => {
      if (n.conn === 1 && n.request === 2) sock.destroy(); // the keep-alive race: closed, no answer
      else sock.write(OK);
    },
    async ({ port, stats, conns }) => {
      const c = await RawConn.plain(port);
      c.write("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n");
      assert.equal((await c.response()).body, "ok");
      c.write("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
      const r = await c.response();
      assert.equal(r.status, 200);
      assert.equal(stats.counters.upstream_rq_retry, 1);
      assert.equal(conns(), 2);
      c.close();
    },
  );
});

Deno.test("the application resets before answering a fresh connection: 503", async () => {
  await withScriptedApp((sock) => sock.destroy(), async ({ port, stats }) => {
    const c = await RawConn.plain(port);
    c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    const r = await c.response();
    assert.equal(r.status, 503);
    assert.match(r.body, /reset before headers/);
    assert.equal(stats.counters.upstream_rq_reset_before_response, 1);
    // The request was complete: the downstream connection stays usable.
    c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await c.response()).status, 503);
    c.close();
  });
});

Deno.test("a reset in the middle of a response closes the downstream connection", async () => {
  await withScriptedApp(
    (sock) => {
      sock.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
      setTimeout(() => sock.destroy(), 20);
    },
    async ({ port, stats }) => {
      const c = await RawConn.plain(port);
      c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      await assert.rejects(c.response(), /ended inside a body/);
      assert.equal(stats.counters.upstream_rq_reset_during_response, 1);
      c.close();
    },
  );
});

Deno.test("a malformed response: 502", async () => {
  const bad = [
    "HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
    "HTTP/1.1 2OO OK\r\n\r\n",
    "SSH-2.0-OpenSSH_9.2\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    "HTTP/1.1 101 Switching Protocols\r\n\r\n", // no upgrade was asked for
  ];
  for (const response of bad) {
    await withScriptedApp((sock) => sock.write(response), async ({ port, stats }) => {
      const c = await RawConn.plain(port);
      c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      const r = await c.response();
      assert.equal(r.status, 502, response);
      assert.equal(stats.counters.upstream_rq_protocol_error, 1);
      c.close();
    });
  }
});

Deno.test("a malformed chunked response body: the downstream connection is closed", async () => {
  await withScriptedApp(
    (sock) => sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"),
    async ({ port }) => {
      const c = await RawConn.plain(port);
      c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      await assert.rejects(c.response(), /ended inside a chunked body/);
      c.close();
    },
  );
});

Deno.test("a close-delimited HTTP/1.0 response reaches an HTTP/1.1 client chunked, on a kept connection", async () => {
  await withScriptedApp(
    (sock) => {
      sock.write("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nno length");
      sock.end(" here");
    },
    async ({ port, conns }) => {
      const c = await RawConn.plain(port);
      for (let i = 1; i <= 2; i++) {
        c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        const r = await c.response();
        assert.equal(r.headers["transfer-encoding"], "chunked");
        assert.equal(r.body, "no length here");
        assert.equal(conns(), i, "the application connection is not reused");
      }
      c.close();
    },
  );
});

Deno.test("Transfer-Encoding wins over Content-Length in a response; interim 103 is forwarded", async () => {
  await withScriptedApp(
    (sock) =>
      sock.write(
        "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" +
          "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      ),
    async ({ port }) => {
      const c = await RawConn.plain(port);
      c.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      const hints = await c.response();
      assert.equal(hints.status, 103);
      assert.equal(hints.headers.link, "</s.css>; rel=preload");
      const r = await c.response();
      assert.equal(r.headers["content-length"], undefined);
      assert.equal(r.body, "abc");
      c.close();
    },
  );
});

Deno.test("the application answers before reading the body: the answer arrives, then the connection closes", async () => {
  await withScriptedApp(
    (sock) => sock.write("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n\r\nbig"),
    async ({ port }) => {
      const c = await RawConn.plain(port);
      c.write("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n" + "x".repeat(1000));
      const r = await c.response();
      assert.equal(r.status, 413);
      assert.equal(r.body, "big");
      // Envoy's connection manager: a response before the request is complete says close (HTTP/1).
      assert.equal(r.headers.connection, "close", "the head says the connection closes");
      assert.ok(await c.closed(), "the rest of the body cannot be skipped reliably: closed");
      c.close();
    },
  );
});

Deno.test("the client goes away mid-body: the application connection is closed too", async () => {
  let appSocketClosed!: () => void;
  const closed = new Promise<void>((resolve) => (appSocketClosed = resolve));
  await withScriptedApp(
    (sock) => sock.on("close", () => appSocketClosed()),
    async ({ port }) => {
      const c = await RawConn.plain(port);
      c.write("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nonly part");
      await new Promise((r) => setTimeout(r, 50));
      c.close();
      await within(closed, 5000, "the application connection closed");
    },
  );
});
