/**
 * The multiplexed pool with the real HTTP/2 codec on both ends over loopback: streams share a
 * connection up to the server's SETTINGS_MAX_CONCURRENT_STREAMS, then another is opened; streams that
 * arrive together wait for one dial instead of dialing each; a connection that got GOAWAY takes no new
 * stream; an idle one is closed by the sweep; a failed dial fails every stream that waited for it.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { plainDialer } from "../outbound/endpoint_pool.ts";
import { RecordingLog } from "../inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { http2Pool, openStream } from "./upstream.ts";

const REQUEST: [string, string][] = [[":method", "GET"], [":scheme", "http"], [":authority", "a"], [
  ":path",
  "/",
]];

/** An h2c server that holds every stream until `release()`, allowing `maxStreams` at once. */
async function holdingServer(maxStreams: number) {
  const held: Http2Stream[] = [];
  const conns: Http2Connection[] = [];
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    conns.push(
      new Http2Connection(socket, {
        role: "server",
        limits: { maxConcurrentStreams: maxStreams },
        onStream: (s) => held.push(s),
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    held,
    get accepted() {
      return accepted;
    },
    /** Waits until `n` streams are held. */
    until(n: number): Promise<void> {
      return within(
        (async () => {
          while (held.length < n) await new Promise((r) => setTimeout(r, 10));
        })(),
        2000,
        `${n} streams at the server`,
      );
    },
    release() {
      for (const s of held.splice(0)) s.respond([[":status", "200"]], { endStream: true });
    },
    goaway() {
      for (const c of conns) c.close();
    },
    async stop() {
      for (const c of conns) c.close(8);
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

Deno.test("mux pool: streams share connections up to the peer's limit, then another is dialed", async () => {
  const srv = await holdingServer(2);
  let dials = 0;
  const pool = http2Pool({
    dial: () => (dials++, plainDialer("127.0.0.1", srv.port, 2000)()),
    log: new RecordingLog(),
    target: "test",
  });
  try {
    // One stream first, so that the server's SETTINGS (2 streams) are known.
    const first = await openStream(pool, REQUEST, true);
    await srv.until(1);
    const more = await Promise.all([1, 2, 3, 4].map(() => openStream(pool, REQUEST, true)));
    await srv.until(5);
    assert.equal(dials, 3, "5 streams at 2 per connection: 3 connections");
    assert.equal(pool.connectionCount, 3);
    srv.release();
    for (const s of [first, ...more]) assert.equal((await s.response)[0][1], "200");
    // Finished streams free their connections: the next ones reuse them.
    const reused = await Promise.all([1, 2].map(() => openStream(pool, REQUEST, true)));
    assert.equal(dials, 3);
    await srv.until(2);
    srv.release();
    await Promise.all(reused.map((s) => s.closed));

    // A GOAWAY from the server: no new stream on those connections, a new one is dialed.
    srv.goaway();
    await within(
      (async () => {
        while (pool.connectionCount > 0) {
          pool.sweep(Date.now());
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      3000,
      "the pool dropping the connections that got GOAWAY",
    );
    const after = await openStream(pool, REQUEST, true);
    assert.equal(dials, 4);
    await srv.until(1);
    srv.release();
    await after.response;
  } finally {
    pool.close();
    await srv.stop();
  }
});

Deno.test("mux pool: simultaneous streams wait for one dial; a failed dial fails each of them", async () => {
  const srv = await holdingServer(100);
  let dials = 0;
  const pool = http2Pool({
    dial: () => (dials++, plainDialer("127.0.0.1", srv.port, 2000)()),
    log: new RecordingLog(),
    target: "test",
    idleTimeoutMs: 50,
  });
  try {
    const streams = await Promise.all(Array.from({ length: 20 }, () => openStream(pool, REQUEST, true)));
    assert.equal(dials, 1, "20 streams opened together: one connection");
    assert.equal(srv.accepted, 1);
    await srv.until(20);
    srv.release();
    await Promise.all(streams.map((s) => s.closed));
    // Idle: the first sweep notes it, a sweep after idleTimeoutMs closes it.
    pool.sweep(Date.now());
    await new Promise((r) => setTimeout(r, 80));
    pool.sweep(Date.now());
    assert.equal(pool.connectionCount, 0);
  } finally {
    pool.close();
    await srv.stop();
  }

  const refused = http2Pool({
    dial: plainDialer("127.0.0.1", freePort(), 2000),
    log: new RecordingLog(),
    target: "refused",
  });
  const results = await Promise.allSettled(
    Array.from({ length: 5 }, () => openStream(refused, REQUEST, true)),
  );
  assert.ok(
    results.every((r) => r.status === "rejected" && /connect to 127.0.0.1:\d+ failed/.test(String(r.reason))),
  );
  refused.close();
});
