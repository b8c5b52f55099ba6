/**
 * RST_STREAM(NO_ERROR) after the peer's END_STREAM (RFC 9113 section 8.1: a server may end a complete
 * response so when the client has not half-closed; the client must not discard the response). meshd's
 * gRPC server does exactly that (meshd/server/grpc_codec/grpc_call.ts).
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { within } from "../testing/deadline.ts";
import { Http2Connection } from "./connection.ts";
import { bodyText, connectClient, get } from "./connection_test_support.ts";
import { NO_ERROR } from "./frame.ts";
import type { HeaderList } from "./headers.ts";
import type { Http2Error } from "./limits.ts";
import type { Http2Stream } from "./stream.ts";

/** A codec server whose streams go to `handler`; the client is connected to it. */
async function withServer(
  handler: (stream: Http2Stream) => void,
  fn: (client: Http2Connection) => Promise<void>,
): Promise<void> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    new Http2Connection(socket, { role: "server", onStream: handler });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { conn } = await connectClient((server.address() as net.AddressInfo).port);
  try {
    await fn(conn);
  } finally {
    conn.close();
    await conn.closed;
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
}

const TRAILERS: HeaderList = [["grpc-status", "7"], ["grpc-message", "denied"]];

for (const body of ["", "abc"]) {
  Deno.test(`http2 client: RST_STREAM(NO_ERROR) right after the trailers keeps ${body ? "the body and " : ""}the trailers`, async () => {
    await withServer((stream) => {
      stream.respond([[":status", "200"]]);
      if (body) void stream.write(new TextEncoder().encode(body));
      stream.end(TRAILERS);
      // As meshd: in the same tick, once the end is framed.
      queueMicrotask(() => stream.reset(NO_ERROR));
    }, async (client) => {
      const s = client.request(get("/x", "POST")); // never half-closed by us
      // Wait for the reset to arrive first: what was received must still be readable after it.
      assert.deepEqual(await within(s.closed, 5000, "stream closed"), { code: NO_ERROR, remote: true });
      assert.equal(await within(bodyText(s), 5000, "body"), body);
      assert.deepEqual(await s.trailers, TRAILERS);
      await assert.rejects(s.write(new Uint8Array([1])), "our send side is closed");
    });
  });
}

Deno.test("http2 client: RST_STREAM(NO_ERROR) before the peer's END_STREAM still fails the stream", async () => {
  await withServer((stream) => {
    stream.respond([[":status", "200"]]);
    void stream.write(new TextEncoder().encode("abc"));
    queueMicrotask(() => stream.reset(NO_ERROR));
  }, async (client) => {
    const s = client.request(get("/x", "POST"));
    assert.deepEqual(await within(s.closed, 5000, "stream closed"), { code: NO_ERROR, remote: true });
    const read = await bodyText(s).then(() => "ended", (e: Http2Error) => e.message);
    assert.match(read, /reset by the peer: code 0/);
    await assert.rejects(s.trailers);
  });
});
