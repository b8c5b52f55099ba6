/**
 * The HTTP/1.1 side of ./h1_upstream.ts byte for byte: a client proxy (outbound listener) sends
 * curl's HTTP/2 streams to a raw TCP application without a sidecar (plain text, service port
 * protocol `HTTP`) that records the request bytes and answers with scripted bytes. Connection-specific
 * fields of the HTTP/1.1 response (Connection and what it nominates, Keep-Alive, Proxy-Connection,
 * Upgrade, TE, Transfer-Encoding) never reach HTTP/2 (curl's nghttp2 refuses a response that has
 * them, RFC 9113 8.2.2), chunked trailers are dropped, a malformed head is a 502, a cut or malformed
 * body resets the stream, the request goes as HTTP/1.1 with Host from `:authority` and a chunked body
 * when its length is unknown, and a client that does not read holds back the application (no
 * unbounded buffering in the proxy).
 */
import assert from "node:assert/strict";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { OutboundListener } from "../outbound/listener.ts";
import { RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import { connectClient } from "../../shared/internal/http2/connection_test_support.ts";
import { assertH2, h2curl, headerOf } from "./h1_test_support.ts";
import { ECHO_HOST, ECHO_PORT, echoService } from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;
const enc = new TextEncoder(), dec = new TextDecoder();

/** The size of /flood's body: a proxy that buffers without bound takes all of it. */
const FLOOD_BYTES = 128 * 1024 * 1024;

/** Scripted answers by request path; `null` writes {@link FLOOD_BYTES} in 1 MiB chunks as fast as the socket takes them. */
const ANSWERS: Record<string, string | null> = {
  "/hop": "HTTP/1.1 200 OK\r\nConnection: x-secret, keep-alive\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n" +
    "Proxy-Connection: keep-alive\r\nUpgrade: h2c\r\nTE: trailers\r\nX-Ok: yes\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
  "/bare-lf": "HTTP/1.1 200 OK\nX-A: b\r\nContent-Length: 0\r\n\r\n",
  "/two-lengths": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
  "/cut": "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
  "/bad-chunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
  "/flood": null,
};

/** The raw application: records each request's bytes, answers by path, then closes. */
class RawApp {
  readonly listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  readonly requests: string[] = [];
  /** Bytes of /flood the kernel accepted. */
  flooded = 0;
  readonly #conns = new Set<Deno.Conn>();
  readonly #serving: Promise<void>;

  constructor() {
    this.#serving = this.#accept();
  }

  get port(): number {
    return (this.listener.addr as Deno.NetAddr).port;
  }

  async #accept(): Promise<void> {
    for await (const conn of this.listener) {
      this.#conns.add(conn);
      this.#serve(conn).catch(() => {}).finally(() => {
        this.#conns.delete(conn);
        try {
          conn.close();
        } catch {
          // already closed
        }
      });
    }
  }

  async #serve(conn: Deno.Conn): Promise<void> {
    let text = "";
    const buf = new Uint8Array(64 * 1024);
    // The head, then a body: by Content-Length, or chunked up to its last chunk.
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) return;
      text += String.fromCharCode(...buf.subarray(0, n));
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) continue;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? 0);
      const chunked = /\r\ntransfer-encoding: chunked/i.test(text);
      if (chunked ? text.endsWith("0\r\n\r\n") : text.length >= end + 4 + length) break;
    }
    this.requests.push(text);
    const path = text.split(" ")[1];
    const answer = ANSWERS[path];
    if (answer === null) {
      await conn.write(enc.encode(`HTTP/1.1 200 OK\r\nContent-Length: ${FLOOD_BYTES}\r\n\r\n`));
      const chunk = new Uint8Array(1024 * 1024);
      while (this.flooded < FLOOD_BYTES) this.flooded += await conn.write(chunk);
      return;
    }
    const body = `request of ${text.length} bytes`;
    await conn.write(
      enc.encode(answer ?? `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
    );
  }

  async close(): Promise<void> {
    this.listener.close();
    for (const c of this.#conns) c.close();
    await this.#serving.catch(() => {});
  }
}

Deno.test(requires(commandMissing("curl"), {
  name: "HTTP/2 to an HTTP/1.1 application: the bytes each way, hostile responses, backpressure",
  async fn(t) {
    const app = new RawApp();
    const base = snapshotOf("PERMISSIVE", undefined);
    const snapshot = { ...base, services: { "foo/echo": echoService("HTTP", app.port, "foo/echo", false) } };
    const outbound = new OutboundListener({
      address: "127.0.0.1",
      port: 0,
      snapshot: () => snapshot,
      log: new RecordingLog(),
    });
    await outbound.start();
    const address = `127.0.0.1:${outbound.port}`;
    const dir = await Deno.makeTempDir({ prefix: "h1up-" });
    const get = (path: string, args: string[] = [], stdin?: Uint8Array) =>
      h2curl(dir, address, AUTHORITY, path, { args, stdin });
    try {
      await t.step(
        "connection-specific fields and chunked trailers are not forwarded into HTTP/2",
        async () => {
          const r = await get("/hop");
          assertH2(r, 200);
          assert.equal(dec.decode(r.body), "hello world");
          assert.equal(headerOf(r, "x-ok"), "yes");
          for (
            const name of [
              "connection",
              "x-secret",
              "keep-alive",
              "proxy-connection",
              "upgrade",
              "te",
              "transfer-encoding",
              "x-trailer",
            ]
          ) {
            assert.equal(headerOf(r, name), undefined, `${name} forwarded: ${r.headers.join(" | ")}`);
          }
        },
      );

      await t.step(
        "the request as HTTP/1.1: Host from :authority, chunked when no length is known",
        async () => {
          const r = await get("/upload", ["-H", "te: trailers"], enc.encode("x".repeat(70_000)));
          assertH2(r, 200);
          const req = app.requests.at(-1)!;
          const head = req.slice(0, req.indexOf("\r\n\r\n"));
          assert.match(head, /^POST \/upload HTTP\/1\.1\r\n/);
          assert.match(head, new RegExp(`\r\nhost: ${AUTHORITY}\r\n`));
          assert.match(head, /\r\ntransfer-encoding: chunked(\r\n|$)/);
          assert.match(head, /\r\nte: trailers(\r\n|$)/);
          assert.ok(!/\r\n:/.test(head), head);
          const body = req.slice(req.indexOf("\r\n\r\n") + 4);
          let decoded = "", i = 0;
          for (;;) {
            const eol = body.indexOf("\r\n", i);
            const size = parseInt(body.slice(i, eol), 16);
            if (size === 0) break;
            decoded += body.slice(eol + 2, eol + 2 + size);
            i = eol + 2 + size + 2;
          }
          assert.equal(decoded, "x".repeat(70_000));
          assert.ok(body.endsWith("0\r\n\r\n"));
        },
      );

      await t.step("a malformed response head is a 502 (bare LF, two Content-Lengths)", async () => {
        for (const path of ["/bare-lf", "/two-lengths"]) {
          const r = await get(path);
          assertH2(r, 502);
          assert.match(dec.decode(r.body), /protocol error/);
        }
      });

      await t.step("a body cut short or badly chunked resets the stream", async () => {
        for (const path of ["/cut", "/bad-chunk"]) {
          const r = await get(path);
          assert.notEqual(r.code, 0, `${path}: curl completed`);
          assert.match(r.stderr, /stream|closed|INTERNAL_ERROR|transfer/i, r.stderr);
        }
      });

      await t.step("a client that does not read holds back the application (backpressure)", async () => {
        const { conn } = await connectClient(outbound.port);
        const s = conn.request([
          [":method", "GET"],
          [":scheme", "http"],
          [":authority", AUTHORITY],
          [":path", "/flood"],
        ], { endStream: true });
        try {
          await within(s.response, 5000, "the flood's head");
          // Nothing is read: the stream and connection windows fill, then the proxy's socket buffer.
          await new Promise((r) => setTimeout(r, 1500));
          const first = app.flooded;
          await new Promise((r) => setTimeout(r, 1000));
          assert.equal(app.flooded, first, "the application kept writing");
          assert.ok(first < 32 * 1024 * 1024, `${first} of ${FLOOD_BYTES} bytes accepted`);
        } finally {
          s.reset();
          conn.close();
          await conn.closed;
        }
      });
    } finally {
      await outbound.close();
      await app.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
