/**
 * The data path through the inbound listener with real curl and a Deno application: keep-alive on
 * both sides, chunked and Content-Length bodies both ways, streaming without buffering, pipelining,
 * HTTP/1.0 clients, and Upgrade/WebSocket over plain text and mutual TLS.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import {
  CertFiles,
  certificateInfo,
  curl,
  declaredHttp,
  makeCa,
  makeLeaf,
  RawConn,
  RecordingLog,
  snapshotOf,
  TestApp,
} from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/app";
const CLIENT_ID = "spiffe://cluster.local/ns/bar/sa/sleep";
const ca = await makeCa("Mesh Root CA");
const serverLeaf = await makeLeaf(ca, { uris: [SERVER_ID], ips: ["127.0.0.1"] });
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
const snapshot: RuntimeSnapshot = snapshotOf("PERMISSIVE", certificateInfo(serverLeaf, ca, SERVER_ID));
const files = await CertFiles.create();
Deno.test.afterAll(() => files.remove());
const mtls = [
  "--cacert",
  await files.write("roots.pem", ca.pem),
  ...await files.client("client", clientLeaf),
];
const tlsOpts = { ca: ca.pem, cert: clientLeaf.certPem, key: clientLeaf.keyPem };

async function withProxy(
  fn: (
    ctx: { port: number; app: TestApp; stats: InboundStats; http: string; https: string },
  ) => Promise<void>,
): Promise<void> {
  const app = new TestApp();
  const http = declaredHttp(app.port);
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => http(snapshot),
    log: new RecordingLog(),
  });
  await listener.start();
  try {
    await fn({
      port: listener.port,
      app,
      stats: listener.observer as InboundStats,
      http: `http://127.0.0.1:${listener.port}`,
      https: `https://127.0.0.1:${listener.port}`,
    });
  } finally {
    await listener.close();
    app.gate.resolve();
    await app.stop();
  }
}

function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

Deno.test("keep-alive: one downstream connection and one upstream connection for several requests", async () => {
  await withProxy(async ({ app, stats, http, https }) => {
    for (const [base, extra] of [[http, []], [https, mtls]] as const) {
      app.remotePorts.length = 0;
      const before = stats.counters.upstream_cx_total;
      const r = await curl([
        ...extra,
        ...["-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null"],
        ...["-w", "%{num_connects} %{http_code}\n", `${base}/headers`, `${base}/headers`, `${base}/stream`],
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(
        r.stdout.trim().split("\n"),
        ["1 200", "0 200", "0 200"],
        "curl reused its connection",
      );
      assert.equal(new Set(app.remotePorts).size, 1, `one upstream connection: ${app.remotePorts}`);
      assert.ok(stats.counters.upstream_cx_total - before <= 1);
    }
    assert.equal(stats.counters.upstream_cx_total, 1, "the pooled connection served both clients");
  });
});

Deno.test("pipelined requests are answered in order on one connection", async () => {
  await withProxy(async ({ port }) => {
    const c = await RawConn.plain(port);
    c.write(
      "GET /headers HTTP/1.1\r\nHost: a\r\nX-N: 1\r\n\r\n" +
        "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
        "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
        "HEAD /big?n=10 HTTP/1.1\r\nHost: a\r\n\r\n" +
        "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    const r1 = await c.response();
    assert.equal(JSON.parse(r1.body).headers["x-n"], "1");
    const r2 = await c.response();
    assert.equal(r2.body, "hello");
    const r3 = await c.response();
    assert.equal(r3.body, "abc");
    assert.equal(r3.headers["x-request-transfer-encoding"], "chunked");
    const r4 = await c.response({ head: true });
    assert.equal(r4.status, 200);
    assert.equal(r4.headers["content-length"], "10");
    const r5 = await c.response();
    assert.equal(r5.body, "part 0\npart 1\npart 2\npart 3\npart 4\n");
    assert.equal(c.ended, false);
    c.close();
  });
});

Deno.test("a client that pipelines without reading is held back (no unbounded buffering)", async () => {
  await withProxy(async ({ port, app }) => {
    const c = await RawConn.plain(port);
    c.socket.pause(); // reads nothing: the kernel buffers fill, then TCP flow control stops the proxy
    const total = 2000;
    c.write("GET /big?n=8000 HTTP/1.1\r\nHost: a\r\n\r\n".repeat(total));
    await new Promise((r) => setTimeout(r, 1000));
    const served = app.remotePorts.length;
    assert.ok(
      served < total / 2,
      `the proxy kept sending requests to the application: ${served} of ${total}`,
    );
    c.socket.resume();
    for (let i = 0; i < total; i++) assert.equal((await c.response()).body.length, 8000);
    assert.equal(app.remotePorts.length, total);
    c.close();
  });
});

Deno.test("chunked both ways, 8 MiB, plain text and mutual TLS (curl)", async () => {
  const data = new Uint8Array(8 << 20);
  for (let i = 0; i < data.length; i += 65536) crypto.getRandomValues(data.subarray(i, i + 65536));
  const input = await files.write("upload.bin", "");
  await Deno.writeFile(input, data);
  const output = join(files.dir, "download.bin");
  await withProxy(async ({ http, https }) => {
    for (const [base, extra] of [[http, []], [https, mtls]] as const) {
      const r = await curl([
        ...extra,
        "-H",
        "Transfer-Encoding: chunked",
        "--data-binary",
        `@${input}`,
        "-D",
        "-",
        "-o",
        output,
        `${base}/echo`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const headers = r.stdout.toLowerCase();
      // curl asks for 100-continue; the proxy answers it once, the application never sees it.
      assert.match(headers, /^http\/1\.1 100 continue\r\n\r\nhttp\/1\.1 200 /);
      assert.match(headers, /transfer-encoding: chunked/, "the response came chunked");
      assert.match(headers, /x-request-transfer-encoding: chunked/, "the application received it chunked");
      assert.equal(sha256(await Deno.readFile(output)), sha256(data));
    }
  });
});

Deno.test("Content-Length bodies both ways, 8 MiB (curl)", async () => {
  const data = new Uint8Array(8 << 20).map((_, i) => i & 0xff);
  const input = await files.write("upload-cl.bin", "");
  await Deno.writeFile(input, data);
  const output = join(files.dir, "download-cl.bin");
  await withProxy(async ({ http, https }) => {
    for (const [base, extra] of [[http, []], [https, mtls]] as const) {
      const r = await curl([...extra, "--data-binary", `@${input}`, "-D", "-", "-o", output, `${base}/echo`]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout.toLowerCase(), new RegExp(`x-request-content-length: ${data.length}`));
      assert.equal(sha256(await Deno.readFile(output)), sha256(data));
      const big = await curl([...extra, "-o", output, "-w", "%{size_download}", `${base}/big?n=5000000`]);
      assert.equal(big.stdout, "5000000");
    }
  });
});

Deno.test("bodies stream: the first part arrives before the application finished, both ways", async () => {
  await withProxy(async ({ app, http }) => {
    // Response: the application holds its second part until the client saw the first.
    const res = await fetch(`${http}/gate`, { signal: AbortSignal.timeout(5000) });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), "first\n");
    app.gate.resolve();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      rest += new TextDecoder().decode(r.value);
    }
    assert.equal(rest, "second\n");

    // Request: the application sees the first part while the client still holds the rest.
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
    const pending = fetch(`${http}/upload`, { method: "POST", body });
    ctl.enqueue(new TextEncoder().encode("part one "));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the first part was not streamed")), 5000);
    });
    try {
      await Promise.race([app.firstChunk.promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
    ctl.enqueue(new TextEncoder().encode("part two"));
    ctl.close();
    const done = await pending;
    assert.equal(await done.text(), String("part one part two".length));
  });
});

Deno.test("Expect: 100-continue is answered by the proxy", async () => {
  await withProxy(async ({ port }) => {
    const c = await RawConn.plain(port);
    c.write("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    const interim = await c.response();
    assert.equal(interim.status, 100);
    c.write("ping");
    const r = await c.response();
    assert.equal(r.status, 200);
    assert.equal(r.body, "ping");
    c.close();
  });
});

Deno.test("HTTP/1.0 clients: a chunked response is decoded and the connection closed", async () => {
  await withProxy(async ({ port }) => {
    const c = await RawConn.plain(port);
    c.write("GET /stream HTTP/1.0\r\n\r\n");
    const r = await c.response();
    assert.equal(r.status, 200);
    assert.equal(r.headers["transfer-encoding"], undefined);
    assert.equal(r.body, "part 0\npart 1\npart 2\npart 3\npart 4\n");
    assert.ok(await c.closed());
    c.close();
    const k = await RawConn.plain(port);
    k.write("GET /big?n=3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    const kr = await k.response();
    assert.equal(kr.body, "aaa");
    assert.equal(kr.headers.connection, "keep-alive");
    k.write("GET /big?n=2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert.equal((await k.response()).body, "aa");
    k.close();
  });
});

Deno.test("WebSocket upgrade passes through (plain text, Deno's WebSocket client)", async () => {
  await withProxy(async ({ port, stats }) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    const messages: string[] = [];
    const closed = new Promise<void>((resolve) => (ws.onclose = () => resolve()));
    await within(
      new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = (e) => reject(new Error(`websocket error: ${(e as ErrorEvent).message}`));
      }),
      5000,
      "the WebSocket open",
    );
    const got = new Promise<void>((resolve) => {
      ws.onmessage = (e) => {
        messages.push(String(e.data));
        if (messages.length === 2) resolve();
      };
    });
    ws.send("hello");
    ws.send("x".repeat(100_000));
    await within(got, 5000, "both echoes");
    assert.deepEqual(messages, ["echo: hello", "echo: " + "x".repeat(100_000)]);
    ws.close();
    await within(closed, 5000, "the WebSocket closed");
    assert.equal(stats.counters.downstream_cx_upgrades_total, 1);
  });
});

Deno.test("WebSocket upgrade passes through mutual TLS (raw frames)", async () => {
  await withProxy(async ({ port }) => {
    const c = await RawConn.tls(port, tlsOpts);
    c.write(
      "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    const r = await c.response();
    assert.equal(r.status, 101);
    assert.equal(r.headers["sec-websocket-accept"], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert.equal(r.headers.upgrade?.toLowerCase(), "websocket");
    const mask = [1, 2, 3, 4];
    const payload = new TextEncoder().encode("hi");
    c.write(
      new Uint8Array([0x81, 0x80 | payload.length, ...mask, ...payload.map((b, i) => b ^ mask[i % 4])]),
    );
    const frame = await c.bytes(2 + "echo: hi".length);
    assert.equal(frame[0], 0x81);
    assert.equal(new TextDecoder().decode(frame.subarray(2)), "echo: hi");
    c.close();
  });
});
