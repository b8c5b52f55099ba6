/**
 * A server's own responses never trip its outbound flood limit (`maxOutboundFrames`, Envoy's
 * `max_outbound_frames`): 1,000 streams on one connection answered with many small messages while
 * the client reads slowly (meshd's cold-sync burst at 1,000 ADS streams per connection) end with
 * every response delivered and no GOAWAY; a client that never reads still gets bounded output.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { within } from "../testing/deadline.ts";
import { Http2Connection } from "./connection.ts";
import { connectClient, get, resumeAndRead } from "./connection_test_support.ts";
import type { Http2Limits } from "./limits.ts";
import type { Http2Stream } from "./stream.ts";

const STREAMS = 1000;
const MESSAGES = 20;
const MESSAGE = new Uint8Array(100).fill(7);
const HEAD: [string, string][] = [[":status", "200"], ["content-type", "application/grpc"]];

/** A codec server (1,000 streams, 1 MiB socket budget as meshd) answering each stream with small writes. */
async function startServer(
  logs: string[],
  limits: Partial<Http2Limits> = {},
  messages = MESSAGES,
): Promise<{ port: number; sockets: Set<net.Socket>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    new Http2Connection(socket, {
      role: "server",
      limits: { maxConcurrentStreams: STREAMS, writeBufferBytes: 1024 * 1024, ...limits },
      log: (line) => logs.push(line),
      onStream: (stream: Http2Stream) => {
        stream.respond(HEAD);
        void (async () => {
          try {
            for (let i = 0; i < messages; i++) await stream.write(MESSAGE);
            stream.end([["grpc-status", "0"]]);
          } catch { /* the connection closed */ }
        })();
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    sockets,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

// 10,000: 1 MiB of socket budget in ~100-octet frames plus 1,000 response heads was over the limit
// (at the flood: 9,001 DATA, 1,000 HEADERS, 4 others). 500: the response heads alone are over it.
for (const maxOutboundFrames of [10_000, 500]) {
  Deno.test(`http2 server: 1,000 streams of small writes to a slow reader, maxOutboundFrames ${maxOutboundFrames}: no flood, all delivered`, async () => {
    const logs: string[] = [];
    const server = await startServer(logs, { maxOutboundFrames });
    const { conn, socket } = await connectClient(server.port, {
      limits: { initialConnectionWindowSize: 64 * 1024 * 1024 },
    });
    try {
      await within(conn.ping(), 5000, "settings exchanged");
      const streams = [];
      for (let i = 0; i < STREAMS; i++) {
        streams.push(conn.request(get(`/s${i}`, "POST"), { endStream: true }));
      }
      socket.pause();
      const received = await resumeAndRead(socket, 1500, streams);
      assert.deepEqual(logs.filter((l) => l.includes("flood")), []);
      for (const r of received) assert.deepEqual(r, { n: MESSAGES * MESSAGE.length, status: "0" });
    } finally {
      conn.close();
      await conn.closed;
      await server.close();
    }
  });
}

Deno.test("http2 server: a client that never reads gets bounded output, then its PING flood is still ENHANCE_YOUR_CALM", async () => {
  const logs: string[] = [];
  // 22 MB of answers: more than loopback's socket buffers take.
  const server = await startServer(logs, {}, 200);
  const { conn, socket } = await connectClient(server.port, {
    limits: { initialConnectionWindowSize: 64 * 1024 * 1024 },
  });
  try {
    await within(conn.ping(), 5000, "settings exchanged");
    const streams = [];
    for (let i = 0; i < STREAMS; i++) streams.push(conn.request(get(`/s${i}`, "POST"), { endStream: true }));
    for (const s of streams) void s.closed;
    socket.pause();
    await new Promise((r) => setTimeout(r, 1500));
    // Our own answers wait for the socket: at most the 1 MiB high-water mark (plus one frame) is
    // queued in the server's socket, and the flood limit did not fire.
    const [serverSocket] = server.sockets;
    assert.ok(serverSocket.writableLength > 0, "the server's output is stalled");
    assert.ok(
      serverSocket.writableLength <= 1024 * 1024 + 16 * 1024,
      `${serverSocket.writableLength} octets queued`,
    );
    assert.deepEqual(logs.filter((l) => l.includes("flood")), []);
    // What the peer makes us send still counts: 1,100 PINGs unread (PING ACKs are control frames).
    for (let i = 0; i < 1100; i++) void conn.ping();
    await within(
      (async () => {
        while (!logs.some((l) => l.includes("ENHANCE_YOUR_CALM"))) {
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      10_000,
      "the control-frame flood limit",
    );
    assert.match(logs.join("\n"), /outbound flood: more than 1000 outbound control frames queued/);
  } finally {
    socket.destroy();
    await conn.closed;
    await server.close();
  }
});
