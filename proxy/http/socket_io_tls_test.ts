/**
 * SocketIo over a server-side node:tls socket: after reading pauses for backpressure, the peer's FIN
 * must still arrive. In Deno 2.9 a TLSSocket paused with `pause()` never reports it (../tcp/relay.ts
 * `pauseReading`), and the connection would wait for the idle timeout.
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { NodeSocketIo } from "./socket_io.ts";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

Deno.test("SocketIo over TLS: the FIN after a backpressure pause arrives, every byte read", async () => {
  const ca = await makeCa("socket io test CA");
  const leaf = await makeLeaf(ca, { dnsNames: ["localhost"] });
  const size = 4 << 20;
  const result = Promise.withResolvers<{ bytes: number; ended: boolean }>();
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem, allowHalfOpen: true }, (socket) => {
    const io = new NodeSocketIo(socket, 1024);
    void (async () => {
      // Not reading yet: the queue passes highWater and SocketIo pauses the socket.
      await new Promise((r) => setTimeout(r, 200));
      let bytes = 0;
      while (true) {
        const c = io.read();
        if (c === null) break;
        if (c === undefined) await io.wait();
        else bytes += c.length;
      }
      result.resolve({ bytes, ended: io.ended });
      io.destroy();
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  const client = tls.connect({
    socket: net.connect({ host: "127.0.0.1", port, allowHalfOpen: true }),
    ca: ca.pem,
    servername: "localhost",
  });
  const clientClosed = new Promise((r) => client.once("close", r));
  client.on("error", () => {});
  client.resume();
  client.end(new Uint8Array(size));
  try {
    const r = await within(result.promise, 10_000, "the FIN through SocketIo");
    assert.deepEqual(r, { bytes: size, ended: true });
  } finally {
    client.destroy();
    await clientClosed;
    await new Promise<void>((r) => server.close(() => r()));
  }
});
