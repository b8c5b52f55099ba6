/**
 * The probes themselves against real servers on 127.0.0.1: TCP connect, HTTPS with a certificate no
 * one trusts (the kubelet does not verify), a gRPC health service (a grpc-js server; the probe is the
 * agent's codec channel), and timeouts.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { CANCEL } from "../../shared/internal/http2/frame.ts";
import type { StreamClose } from "../../shared/internal/http2/stream.ts";
import { messagePrefix } from "../../shared/internal/grpc/messages.ts";
import {
  framed,
  GRPC_HEAD,
  requestMessages,
  startScriptedServer,
} from "../agent/grpc_channel_test_support.ts";
import { PROBE_MAX_MESSAGE_BYTES, runAppProbe } from "./app_probe.ts";

Deno.test("runAppProbe tcpSocket: a listening port passes, a closed one fails with the reason", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepting = (async () => {
    for await (const c of listener) c.close();
  })();
  try {
    assert.deepEqual(await runAppProbe({ tcpSocket: { port: listener.addr.port } }), {
      status: 200,
      reason: `connected to port ${listener.addr.port}`,
    });
  } finally {
    listener.close();
    await accepting.catch(() => {});
  }
  const closed = await runAppProbe({ tcpSocket: { port: freePort() } });
  assert.equal(closed.status, 500);
  assert.match(closed.reason, /^cannot connect to port \d+: /);
});

Deno.test("runAppProbe httpGet HTTPS: an untrusted certificate is accepted, as by the kubelet", async () => {
  const ca = await makeCa("untrusted");
  const leaf = await makeLeaf(ca, { dnsNames: ["app.example"] });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: leaf.certPem, key: leaf.keyPem, onListen() {} },
    (req) => new Response(null, { status: new URL(req.url).pathname === "/ok" ? 204 : 503 }),
  );
  try {
    const port = server.addr.port;
    assert.equal((await runAppProbe({ httpGet: { path: "/ok", port, scheme: "HTTPS" } })).status, 200);
    assert.equal((await runAppProbe({ httpGet: { path: "/down", port, scheme: "HTTPS" } })).status, 503);
    // Plain HTTP to a TLS port is no success.
    assert.equal((await runAppProbe({ httpGet: { path: "/ok", port, scheme: "HTTP" } })).status, 500);
  } finally {
    await server.shutdown();
  }
});

Deno.test("runAppProbe: an application that accepts and never answers fails after timeoutSeconds", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) held.push(c);
  })();
  try {
    let started = performance.now();
    for (
      const probe of [{ httpGet: { path: "/", port: listener.addr.port } }, {
        grpc: { port: listener.addr.port },
      }]
    ) {
      const r = await runAppProbe({ ...probe, timeoutSeconds: 1 });
      const ms = performance.now() - started;
      assert.deepEqual(
        r,
        { status: 500, reason: "no answer within 1s (timeoutSeconds)" },
        Object.keys(probe)[0],
      );
      assert.ok(ms >= 950 && ms < 5000, `${ms} ms`);
      started = performance.now();
    }
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const c of held) c.close();
  }
});

const health = protobuf.Root.fromJSON({
  nested: {
    Req: { fields: { service: { type: "string", id: 1 } } },
    Res: { fields: { status: { type: "int32", id: 1 } } },
  },
});
const REQ = health.lookupType("Req");
const RES = health.lookupType("Res");

/** A gRPC server with grpc.health.v1.Health/Check: "" SERVING, "down" NOT_SERVING, else NOT_FOUND. */
async function healthServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const server = new grpc.Server();
  server.register(
    "/grpc.health.v1.Health/Check",
    (
      call: grpc.ServerUnaryCall<{ service: string }, { status: number }>,
      cb: grpc.sendUnaryData<{ status: number }>,
    ) => {
      const service = call.request.service;
      if (service === "") cb(null, { status: 1 });
      else if (service === "down") cb(null, { status: 2 });
      else cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${service}` });
    },
    (res: { status: number }) => Buffer.from(RES.encode(RES.create(res)).finish()),
    (b: Buffer) => REQ.toObject(REQ.decode(b), { defaults: true }) as { service: string },
    "unary",
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return {
    port,
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

Deno.test("runAppProbe grpc: grpc.health.v1.Health/Check SERVING passes, NOT_SERVING and errors fail", async () => {
  const server = await healthServer();
  try {
    assert.deepEqual(await runAppProbe({ grpc: { port: server.port }, timeoutSeconds: 5 }), {
      status: 200,
      reason: "SERVING",
    });
    assert.deepEqual(await runAppProbe({ grpc: { port: server.port, service: "down" }, timeoutSeconds: 5 }), {
      status: 500,
      reason: "gRPC health: NOT_SERVING",
    });
    const unknown = await runAppProbe({ grpc: { port: server.port, service: "x" }, timeoutSeconds: 5 });
    assert.equal(unknown.status, 500);
    assert.match(unknown.reason, /^gRPC health check failed: 5 NOT_FOUND: unknown service x/);
  } finally {
    await server.stop();
  }
});

Deno.test("runAppProbe grpc: nothing listening fails", async () => {
  const closed = await runAppProbe({ grpc: { port: freePort() }, timeoutSeconds: 2 });
  assert.equal(closed.status, 500);
  assert.match(closed.reason, /^gRPC health check failed: 14 UNAVAILABLE: cannot reach 127\.0\.0\.1:\d+: /);
});

Deno.test("runAppProbe grpc: an answer over 4 KiB, or a second answer, fails without being kept; the stream is cancelled", async () => {
  const closes: Promise<StreamClose>[] = [];
  const server = await startScriptedServer(async ({ stream }) => {
    closes.push(stream.closed);
    const service = new TextDecoder().decode((await requestMessages(stream))[0]).slice(2);
    stream.respond(GRPC_HEAD);
    const serving = new Uint8Array([8, 1]); // HealthCheckResponse { status: SERVING }
    try {
      if (service === "big") await stream.write(messagePrefix(PROBE_MAX_MESSAGE_BYTES + 1));
      else for (let i = 0; i < 10_000; i++) await stream.write(framed(serving));
    } catch {
      // reset by the probe
    }
  });
  try {
    const big = await runAppProbe({ grpc: { port: server.port, service: "big" }, timeoutSeconds: 5 });
    assert.equal(big.status, 500);
    assert.match(big.reason, /8 RESOURCE_EXHAUSTED: Received message larger than max \(4097 vs\. 4096\)/);
    const many = await runAppProbe({ grpc: { port: server.port, service: "many" }, timeoutSeconds: 5 });
    assert.deepEqual(many, {
      status: 500,
      reason: "gRPC health check failed: 12 UNIMPLEMENTED: Too many responses received",
    });
    for (const close of closes) assert.deepEqual(await close, { code: CANCEL, remote: true });
  } finally {
    await server.close();
  }
});
