/**
 * meshd's cold-sync burst on one connection: 1,000 bidirectional streams answered with small
 * messages while the client does not read for a while. The codec server must hold its own answers
 * for the socket (backpressure) instead of tripping its outbound flood limit (GOAWAY
 * ENHANCE_YOUR_CALM "more than 10000 outbound frames queued", seen in tests/bench/meshd_scale at
 * 1,000 streams per connection).
 */
import assert from "node:assert/strict";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { connectClient, resumeAndRead } from "../../../shared/internal/http2/connection_test_support.ts";
import { messagePrefix } from "../../../shared/internal/grpc/messages.ts";
import { startTestServer } from "./codec_server_test_support.ts";

const STREAMS = 1000;
const MESSAGES = 20;
const BODY = new Uint8Array(95).fill(3);

Deno.test("codec server: 1,000 Chat streams on one connection, client not reading for 1.5 s: every answer, no GOAWAY", async () => {
  const s = await startTestServer({ maxStreams: STREAMS });
  const { conn, socket } = await connectClient(s.ports.plaintext, {
    limits: { initialConnectionWindowSize: 64 * 1024 * 1024, writeBufferBytes: 64 * 1024 * 1024 },
  });
  let goaway = "";
  conn.closed.then((info) => goaway = info.remote ? info.reason : "");
  try {
    await within(conn.ping(), 5000, "settings exchanged");
    const request = new Uint8Array(5 + BODY.length);
    request.set(messagePrefix(BODY.length));
    request.set(BODY, 5);
    const streams = [];
    for (let i = 0; i < STREAMS; i++) {
      streams.push(conn.request([
        [":method", "POST"],
        [":scheme", "http"],
        [":authority", "meshd"],
        [":path", "/test.T/Chat"],
        ["content-type", "application/grpc"],
        ["te", "trailers"],
      ]));
    }
    socket.pause();
    // One message per stream per round, each round framed before the next: every message is a DATA
    // frame of its own, and so is every answer (a fan-out to 1,000 streams, as meshd's cold sync).
    for (let m = 0; m < MESSAGES; m++) {
      for (const st of streams) void st.write(request);
      await new Promise((r) => queueMicrotask(() => r(undefined)));
    }
    for (const st of streams) st.end();
    const results = await resumeAndRead(socket, 1500, streams);
    assert.equal(goaway, "");
    for (const r of results) assert.deepEqual(r, { n: MESSAGES * request.length, status: "0" });
  } finally {
    conn.close();
    await conn.closed;
    await s.close();
  }
});
