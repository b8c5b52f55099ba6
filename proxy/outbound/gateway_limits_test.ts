/**
 * The request-headers, request and idle timeouts on a gateway's HTTPS listener, where a connection
 * spends time before the HTTP session starts: reading the ClientHello (to choose the server by SNI)
 * and the TLS handshake. Raw sockets stall each stage, or trickle a body; real curl keeps being
 * served through the same listener.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";
import { makeTestCa } from "../../shared/credentials/_test_support.ts";
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { curl, RawConn, RecordingLog, snapshotOf, TestApp } from "../inbound/test_support.ts";
import { appService } from "../http/limits_test_support.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { OutboundListener } from "./listener.ts";
import type { OutboundStats } from "./outbound_stats.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const HOST = "httpbin.example.com";
const HEADERS_MS = 1000;
const IDLE_MS = 2000;
/** The sweep's interval (250 ms), a TLS handshake and a busy machine (2 shared cores). */
const MARGIN_MS = 1500;

function gatewaySnapshot(appPort: number, cert: { certPem: string; keyPem: string }): RuntimeSnapshot {
  const rc: RouteConfiguration = {
    name: "https.443.https.gw.foo",
    port: 443,
    bindPort: 443,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: `${HOST}:443`,
      domains: [HOST],
      routes: [{
        name: "foo/httpbin.0",
        matches: [],
        destinations: [{ host: "app.foo.svc.cluster.local", port: 80, weight: 100 }],
      }],
    }],
    tls: {
      mode: "SIMPLE",
      sniHosts: [HOST],
      credentialName: "kubernetes://httpbin-credential",
      caCredentialName: "",
      minProtocolVersion: "",
      maxProtocolVersion: "",
      subjectAltNames: [],
    },
  };
  const base = snapshotOf("PERMISSIVE", undefined);
  return {
    ...base,
    workload: base.workload && { ...base.workload, namespace: "foo" },
    services: appService(appPort),
    routes: { [rc.name]: rc },
    credentials: {
      "kubernetes://httpbin-credential": {
        name: "kubernetes://httpbin-credential",
        certificateChain: cert.certPem,
        privateKey: cert.keyPem,
        caCertificates: "",
        source: "mesh-system/httpbin-credential",
      },
    },
  };
}

/** The ClientHello a TLS client sends for `HOST` (written to a sink, not to a server). */
function clientHello(): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const sink = new Duplex({
      read() {},
      write(chunk: Uint8Array, _enc, cb) {
        resolve(new Uint8Array(chunk));
        cb();
        client.destroy();
      },
    });
    const client = tls.connect({ socket: sink as unknown as net.Socket, servername: HOST });
    client.on("error", () => {});
  });
}

function tlsConn(port: number, ca: string): Promise<RawConn> {
  const handshake = new Promise<RawConn>((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, servername: HOST, ca }, () => resolve(new RawConn(s)));
    s.once("error", reject);
  });
  return within(handshake, 5000, "the TLS handshake with the gateway");
}

/** The gateway's HTTPS listener (not started) with these limits. */
function gatewayListener(snapshot: RuntimeSnapshot, limits: Partial<ListenerLimits>): OutboundListener {
  return new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => snapshot,
    log: new RecordingLog(),
    routeNames: ["https.443.https.gw.foo"],
    connectionLimits: limits,
  });
}

Deno.test(
  "gateway HTTPS: a stalled ClientHello, handshake or head closes within the headers timeout, an idle TLS connection within the idle timeout; curl is served",
  async () => {
    const { ca, leaf } = await makeTestCa();
    const cert = await leaf(HOST);
    const app = new TestApp();
    const snapshot = gatewaySnapshot(app.port, cert);
    const listener = gatewayListener(snapshot, {
      requestHeadersTimeoutMs: HEADERS_MS,
      idleTimeoutMs: IDLE_MS,
    });
    await listener.start();
    const caFile = await Deno.makeTempFile({ suffix: ".pem" });
    await Deno.writeTextFile(caFile, ca.certPem);
    const port = listener.port;
    const curlArgs = [
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--cacert",
      caFile,
      "--resolve",
      `${HOST}:${port}:127.0.0.1`,
    ];
    try {
      // A TLS connection idle after a request (its byte counts come from the TLS socket).
      const idle = await tlsConn(port, ca.certPem);
      idle.write(`GET /headers HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
      assert.equal((await idle.response()).status, 200);
      const idleAt = Date.now();
      const start = Date.now();
      const partialHello = await RawConn.plain(port);
      partialHello.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      const helloAt = Date.now();
      const stalledHandshake = await RawConn.plain(port);
      stalledHandshake.write(await clientHello());
      const handshakeAt = Date.now();
      const trickled = await tlsConn(port, ca.certPem);
      trickled.write("GET /headers HTTP/1.1\r\nHost: httpbin.example.com\r\n");
      const trickledAt = Date.now();

      let served = 0;
      while (Date.now() - start < HEADERS_MS) {
        const r = await curl([...curlArgs, `https://${HOST}:${port}/headers`]);
        assert.equal(r.stdout, "200", r.stderr);
        served++;
      }
      assert.equal((await trickled.response({ timeoutMs: HEADERS_MS + MARGIN_MS })).status, 408);
      // Each within the timeout plus the margin, counted from when it was opened.
      const closed = await Promise.all(
        ([[partialHello, helloAt], [stalledHandshake, handshakeAt], [trickled, trickledAt]] as const).map((
          [c, at],
        ) => c.closed(Math.max(0, at + HEADERS_MS + MARGIN_MS - Date.now()))),
      );
      assert.deepEqual(closed, [true, true, true], "every stalled connection is closed by timeout + margin");
      assert.ok(Date.now() - start >= HEADERS_MS - 50);
      assert.ok(served >= 1, `curl served ${served} times`);
      assert.equal((listener.observer as OutboundStats).counters.downstream_rq_header_timeout, 3);
      assert.ok(await idle.closed(Math.max(0, idleAt + IDLE_MS + MARGIN_MS - Date.now())), "idle TLS closed");
      assert.ok(Date.now() - idleAt >= IDLE_MS - 50, "not before the idle timeout");
      assert.equal((listener.observer as OutboundStats).counters.downstream_cx_idle_timeout, 1);
      for (const c of [partialHello, stalledHandshake, trickled, idle]) c.close();
    } finally {
      await listener.close();
      await Deno.remove(caFile);
      await app.stop();
    }
  },
);

Deno.test("gateway HTTPS: a body trickled past the request timeout gets 408 and its upload is reset; a body in time is served", async () => {
  const REQUEST_MS = 1500;
  const { ca, leaf } = await makeTestCa();
  const app = new TestApp();
  const snapshot = gatewaySnapshot(app.port, await leaf(HOST));
  const listener = gatewayListener(snapshot, { requestTimeoutMs: REQUEST_MS, idleTimeoutMs: 30_000 });
  await listener.start();
  try {
    const slow = await tlsConn(listener.port, ca.certPem);
    const start = Date.now();
    slow.write(`POST /upload HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 1000\r\n\r\n`);
    const trickle = setInterval(() => slow.ended || slow.write("0123456789"), 100);
    const inTime = await tlsConn(listener.port, ca.certPem);
    inTime.write(`POST /upload HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 10\r\n\r\n01234`);
    await new Promise((r) => setTimeout(r, 300));
    inTime.write("56789");
    assert.equal((await inTime.response()).body, "10");
    const reply = await slow.response({ timeoutMs: REQUEST_MS + MARGIN_MS });
    clearInterval(trickle);
    assert.equal(reply.status, 408);
    assert.equal(reply.body, "request timeout");
    assert.ok(Date.now() - start >= REQUEST_MS - 50, "not before the request timeout");
    for (let i = 0; i < 40 && app.uploadsCut === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(app.uploadsCut, 1, "the application saw its upload cut");
    assert.equal((listener.observer as OutboundStats).counters.downstream_rq_timeout, 1);
    for (const c of [slow, inTime]) c.close();
  } finally {
    await listener.close();
    await app.stop();
  }
});
