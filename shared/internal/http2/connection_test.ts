import assert from "node:assert/strict";
import { within } from "../testing/deadline.ts";
import * as net from "node:net";
import { Http2Connection } from "./connection.ts";
import { bodyText, connectClient, get, withEchoClient } from "./connection_test_support.ts";
import { startEchoServer } from "./echo_test_support.ts";
import { CANCEL, NO_ERROR, REFUSED_STREAM } from "./frame.ts";
import { headerValue } from "./headers.ts";
import type { Http2Error } from "./limits.ts";

Deno.test(
  "connection: a GET and a POST through our client and server",
  withEchoClient(async ({ conn }) => {
    const s = conn.request(get("/hi"), { endStream: true });
    const head = await within(s.response, 5000, "response");
    assert.equal(headerValue(head, ":status"), "200");
    assert.equal(await bodyText(s), "hello /hi\n");
    const p = conn.request(get("/echo", "POST"));
    await p.write(new TextEncoder().encode("ping"));
    p.end();
    assert.equal(await within(bodyText(p), 5000, "echo"), "ping");
    assert.deepEqual(await p.closed, { code: NO_ERROR, remote: false });
  }),
);

Deno.test(
  "connection: 4 MiB each way on 8 streams, flow control only (64 KiB stream windows)",
  withEchoClient(async ({ conn }) => {
    const size = 4 * 1024 * 1024;
    const body = new Uint8Array(size);
    for (let i = 0; i < size; i++) body[i] = i % 251;
    const results = await within(
      Promise.all(Array.from({ length: 8 }, async () => {
        const s = conn.request(get("/big", "PUT"));
        const reading = (async () => {
          let n = 0;
          let ok = true;
          for await (const c of s) {
            for (let i = 0; i < c.length; i++) if (c[i] !== (n + i) % 251) ok = false;
            n += c.length;
          }
          return { n, ok };
        })();
        for (let o = 0; o < size; o += 100_000) await s.write(body.subarray(o, Math.min(size, o + 100_000)));
        s.end();
        return await reading;
      })),
      60_000,
      "8 echoes of 4 MiB",
    );
    for (const r of results) assert.deepEqual(r, { n: size, ok: true });
  }),
);

Deno.test(
  "connection: trailers both ways",
  withEchoClient(async ({ conn }) => {
    const s = conn.request(get("/t", "POST", [["x-echo-trailers", "1"], ["te", "trailers"]]));
    await s.write(new TextEncoder().encode("abc"));
    s.end([["grpc-timeout", "1S"]]);
    assert.equal(await within(bodyText(s), 5000, "body"), "abc");
    assert.deepEqual(await s.trailers, [["x-echo", "done"], ["grpc-status", "0"]]);
  }),
);

Deno.test(
  "connection: graceful close lets open streams finish, then refuses new ones",
  withEchoClient(async ({ server, conn }) => {
    const s = conn.request(get("/slow", "POST"));
    await s.write(new TextEncoder().encode("part1"));
    await within(s.response, 5000, "response");
    server.connections[0].close(); // GOAWAY(NO_ERROR, last stream 1)
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(conn.canOpenStream, false);
    assert.throws(() => conn.request(get("/late"), { endStream: true }), /no stream available/);
    await s.write(new TextEncoder().encode("+part2"));
    s.end();
    assert.equal(await within(bodyText(s), 5000, "body after GOAWAY"), "part1+part2");
    const info = await within(conn.closed, 5000, "client closed");
    assert.equal(info.code, NO_ERROR);
  }),
);

Deno.test(
  "connection: a reset stream fails its reads and writes, the connection goes on",
  withEchoClient(async ({ conn }) => {
    const s = conn.request(get("/r", "POST"));
    await s.write(new Uint8Array(10));
    s.reset();
    await assert.rejects(s.read(), (e: Http2Error) => e.code === CANCEL);
    await assert.rejects(s.write(new Uint8Array(1)), (e: Http2Error) => e.code === CANCEL);
    assert.deepEqual(await s.closed, { code: CANCEL, remote: false });
    const ok = conn.request(get("/after"), { endStream: true });
    assert.equal(await within(bodyText(ok), 5000, "next stream"), "hello /after\n");
  }),
);

Deno.test(
  "connection: streams over max_concurrent_streams are refused with REFUSED_STREAM",
  withEchoClient(async ({ conn }) => {
    await within(conn.ping(), 5000, "settings exchanged");
    const open = Array.from({ length: 100 }, (_, i) => conn.request(get(`/o${i}`, "POST")));
    assert.equal(conn.canOpenStream, false);
    assert.throws(() => conn.request(get("/101")), (e: Http2Error) => e.code === REFUSED_STREAM);
    for (const s of open) s.end();
    for (const s of open) await within(s.closed, 5000, "stream end");
    assert.equal(conn.canOpenStream, true);
  }),
);

Deno.test("connection: 1xx heads are sent before the response and skipped by the client", async () => {
  const server = net.createServer((socket) => {
    new Http2Connection(socket, {
      role: "server",
      onStream: (s) => {
        s.informational([[":status", "100"]]);
        s.informational([[":status", "103"], ["link", "</a.css>; rel=preload"]]);
        s.respond([[":status", "204"]], { endStream: true });
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { conn } = await connectClient((server.address() as net.AddressInfo).port);
  try {
    const s = conn.request(get("/early"), { endStream: true });
    assert.deepEqual(await within(s.response, 5000, "response"), [[":status", "204"]]);
    assert.equal(await bodyText(s), "");
  } finally {
    conn.close();
    await conn.closed;
    await new Promise((r) => server.close(r));
  }
});

Deno.test("connection: header blocks over one frame go out as HEADERS + CONTINUATION, both ways", async () => {
  const server = net.createServer((socket) => {
    new Http2Connection(socket, {
      role: "server",
      onStream: (s) => {
        const got = s.headers.find(([n]) => n === "x-big")?.[1].length ?? 0;
        s.respond([[":status", "200"], ["x-big", "b".repeat(40_000)], ["x-got", String(got)]], {
          endStream: true,
        });
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { conn } = await connectClient((server.address() as net.AddressInfo).port);
  try {
    // "\x01" has a 23-bit Huffman code, so 40,000 of them stay literal: 40 KB of block, 3 frames.
    const s = conn.request(get("/big-head", "GET", [["x-big", "\x01".repeat(40_000)]]), { endStream: true });
    const head = await within(s.response, 5000, "response");
    assert.equal(head.find(([n]) => n === "x-got")?.[1], "40000");
    assert.equal(head.find(([n]) => n === "x-big")?.[1].length, 40_000);
  } finally {
    conn.close();
    await conn.closed;
    await new Promise((r) => server.close(r));
  }
});

Deno.test(
  "connection: writes, reads and pings nobody awaits fail without an unhandled rejection",
  withEchoClient(async ({ conn }) => {
    const s = conn.request(get("/ignored", "POST"));
    const big = new Uint8Array(1 << 20); // more than the windows: the write is still queued at the reset
    void s.write(big);
    void s.read();
    s.reset();
    void s.write(big); // after the reset: rejected at once
    void s.read();
    const other = conn.request(get("/ok"), { endStream: true });
    assert.equal(await within(bodyText(other), 5000, "next stream"), "hello /ok\n");
    void conn.ping();
    conn.close(CANCEL); // at once: the ping fails
    await within(conn.closed, 5000, "closed");
    await new Promise((r) => setTimeout(r, 50)); // let any unhandled rejection surface
  }),
);

Deno.test("connection: one write larger than the socket's high-water mark, with no WINDOW_UPDATE to come", async () => {
  // The peer's windows (32 MiB, as curl's) cover the whole body: only the socket's drain can restart
  // the stream after the first 64 KiB filled the writer.
  const size = 1024 * 1024;
  const server = await startEchoServer(0, false, undefined, (stream) => {
    stream.respond([[":status", "200"]]);
    stream.write(new Uint8Array(size).fill(7)).then(() => stream.end(), () => {});
  });
  const window = 32 * 1024 * 1024;
  const { conn } = await connectClient(server.port, {
    limits: { initialStreamWindowSize: window, initialConnectionWindowSize: window },
  });
  const s = conn.request(get("/one-write"), { endStream: true });
  try {
    const read = (async () => {
      let n = 0;
      for await (const c of s) n += c.length;
      return n;
    })();
    assert.equal(await within(read, 5000, "the 1 MiB body"), size);
  } finally {
    s.reset();
    conn.close();
    await conn.closed;
    await server.close();
  }
});

Deno.test(
  "connection: writeAll sends its chunks in order (empty ones skipped) and settles once, for the last",
  withEchoClient(async ({ conn }) => {
    const s = conn.request(get("/echo", "POST"));
    const enc = (t: string) => new TextEncoder().encode(t);
    const big = new Uint8Array(100_000).fill(0x61);
    await within(
      s.writeAll(enc("head"), [new Uint8Array(0), enc("-mid-"), big, enc("tail")]),
      5000,
      "writeAll",
    );
    await s.writeAll(new Uint8Array(0), [new Uint8Array(0)]);
    s.end();
    const body = await within(bodyText(s), 5000, "echo");
    assert.equal(body, `head-mid-${"a".repeat(100_000)}tail`);
    await assert.rejects(s.writeAll(enc("late"), [enc("x")]), /closed for writing/);
  }),
);
