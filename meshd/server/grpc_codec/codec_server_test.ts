import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { makeCa, makeLeaf } from "../../../shared/internal/testing/test_ca.ts";
import { startTestServer, testClient, type TestServer, unary } from "./codec_server_test_support.ts";

async function withServer(fn: (s: TestServer, clients: grpc.Client[]) => Promise<void>): Promise<void> {
  const s = await startTestServer();
  const clients: grpc.Client[] = [];
  try {
    await fn(s, clients);
  } finally {
    for (const c of clients) c.close();
    await s.close();
  }
}

const SAN = "URI:spiffe://cluster.local/ns/foo/sa/sleep";

/**
 * A test whose client fails to connect on purpose: grpc-js then leaves its subchannel's reconnect
 * backoff timer behind, which client.close() does not clear (@grpc/grpc-js 1.14.7, measured with
 * --trace-leaks; as in ../serving/pool_test.ts). The server's own timers are checked by the others.
 */
function failingClientTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });
}

Deno.test("codec server: a grpc-js unary call over mutual TLS shows the verified certificate and the metadata", async () => {
  await withServer(async (s, clients) => {
    const c = testClient(
      s.ports.tls,
      grpc.credentials.createSsl(
        Buffer.from(s.ca.pem),
        Buffer.from(s.client.keyPem),
        Buffer.from(s.client.certPem),
      ),
    );
    clients.push(c);
    const md = new grpc.Metadata();
    md.set("x-test", "hello");
    const answer = await within(unary(c, "/test.T/Echo", new TextEncoder().encode("hi"), md), 5000, "echo");
    assert.equal(answer.toString(), `${SAN}|hi`);
    assert.deepEqual(s.seen.echo, [{ san: SAN, xTest: "hello" }]);
  });
});

Deno.test("codec server: on the TLS port a client without a certificate, or with a foreign one, is served without an identity", async () => {
  await withServer(async (s, clients) => {
    const foreignCa = await makeCa("foreign CA");
    const foreign = await makeLeaf(foreignCa, { uris: ["spiffe://cluster.local/ns/foo/sa/sleep"] });
    const none = testClient(s.ports.tls, grpc.credentials.createSsl(Buffer.from(s.ca.pem)));
    const wrong = testClient(
      s.ports.tls,
      grpc.credentials.createSsl(
        Buffer.from(s.ca.pem),
        Buffer.from(foreign.keyPem),
        Buffer.from(foreign.certPem),
      ),
    );
    clients.push(none, wrong);
    assert.equal(
      (await within(unary(none, "/test.T/Echo", new Uint8Array([1])), 5000, "none")).toString(),
      "|\x01",
    );
    assert.equal(
      (await within(unary(wrong, "/test.T/Echo", new Uint8Array([2])), 5000, "wrong")).toString(),
      "|\x02",
    );
    assert.deepEqual(s.seen.echo.map((e) => e.san), ["", ""]);
  });
});

failingClientTest("codec server: a plain-text client at the TLS port gets no call through", async () => {
  await withServer(async (s, clients) => {
    const c = testClient(s.ports.tls);
    clients.push(c);
    const md = new grpc.Metadata();
    const e = await unary(c, "/test.T/Echo", new Uint8Array([1]), md).then(() => null, (e) => e);
    assert.equal(e?.code, grpc.status.UNAVAILABLE);
    assert.equal(s.seen.echo.length, 0);
  });
});

Deno.test("codec server: a bidirectional stream echoes messages of any size (several DATA frames) and ends with OK", async () => {
  await withServer(async (s, clients) => {
    const c = testClient(s.ports.plaintext);
    clients.push(c);
    const call = c.makeBidiStreamRequest("/test.T/Chat", (b: Buffer) => b, (b: Buffer) => b);
    const got: number[] = [];
    const done = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
    call.on("data", (m: Buffer) => got.push(m.length));
    for (const n of [0, 1, 20_000, 60_000]) call.write(Buffer.alloc(n, 7));
    call.end();
    const status = await within(done, 5000, "status");
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(got, [0, 1, 20_000, 60_000]);
  });
});

Deno.test("codec server: an unknown method is UNIMPLEMENTED; a message over the limit is RESOURCE_EXHAUSTED", async () => {
  await withServer(async (s, clients) => {
    const c = testClient(s.ports.plaintext);
    clients.push(c);
    const unknown = await unary(c, "/test.T/Nope", new Uint8Array(1)).then(() => null, (e) => e);
    assert.equal(unknown?.code, grpc.status.UNIMPLEMENTED);
    assert.match(unknown.details, /\/test\.T\/Nope/);
    const big = await unary(c, "/test.T/Echo", new Uint8Array(64 * 1024 + 1)).then(() => null, (e) => e);
    assert.equal(big?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(s.seen.echo.length, 0, "the handler never saw the oversized request");
    // The connection still serves.
    assert.equal((await unary(c, "/test.T/Echo", new Uint8Array([5]))).toString(), "|\x05");
  });
});

Deno.test("codec server: a client that goes away mid-stream cancels the call, and the server keeps serving", async () => {
  await withServer(async (s, clients) => {
    const c = testClient(s.ports.plaintext);
    const call = c.makeBidiStreamRequest("/test.T/Chat", (b: Buffer) => b, (b: Buffer) => b);
    call.on("error", () => {});
    const first = new Promise((r) => call.once("data", r));
    call.write(Buffer.from("x"));
    await within(first, 5000, "first echo");
    c.close(); // grpc-js sends GOAWAY and closes its session
    call.cancel();
    await within(
      (async () => {
        while (s.seen.chatCancelled === 0) await new Promise((r) => setTimeout(r, 20));
      })(),
      5000,
      "cancelled",
    );
    const again = testClient(s.ports.plaintext);
    clients.push(again);
    assert.equal((await unary(again, "/test.T/Echo", new Uint8Array([6]))).toString(), "|\x06");
  });
});

failingClientTest(
  "codec server: the serving certificate follows the provider for new connections",
  async () => {
    await withServer(async (s, clients) => {
      const ca2 = await makeCa("second CA");
      const serving2 = await makeLeaf(ca2, { dnsNames: ["localhost"], ips: ["127.0.0.1"] });
      s.certs.update({
        certChainPem: serving2.certPem,
        privateKeyPem: serving2.keyPem,
        trustBundlePem: s.ca.pem,
      });
      const old = testClient(s.ports.tls, grpc.credentials.createSsl(Buffer.from(s.ca.pem)));
      const next = testClient(s.ports.tls, grpc.credentials.createSsl(Buffer.from(ca2.pem)));
      clients.push(old, next);
      assert.equal(
        (await within(unary(next, "/test.T/Echo", new Uint8Array([3])), 5000, "new")).toString(),
        "|\x03",
      );
      const e = await unary(old, "/test.T/Echo", new Uint8Array([3])).then(() => null, (e) => e);
      assert.equal(e?.code, grpc.status.UNAVAILABLE, "the old root no longer verifies meshd");
    });
  },
);
