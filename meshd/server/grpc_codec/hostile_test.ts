/**
 * Each defence of the codec gRPC server against raw frames from the project's codec in its client
 * role (or raw TCP): the exact answer is asserted, so that removing the defence fails its case.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { connectClient } from "../../../shared/internal/http2/connection_test_support.ts";
import { REFUSED_STREAM } from "../../../shared/internal/http2/frame.ts";
import type { HeaderList } from "../../../shared/internal/http2/headers.ts";
import type { Http2Stream } from "../../../shared/internal/http2/stream.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import type { ChildServerOptions } from "../serving/wire.ts";
import { startTestServer } from "./codec_server_test_support.ts";

function head(path: string, extra: HeaderList = [], method = "POST", type = "application/grpc"): HeaderList {
  return [
    [":method", method],
    [":scheme", "http"],
    [":authority", "meshd"],
    [":path", path],
    ["content-type", type],
    ["te", "trailers"],
    ...extra,
  ];
}

function message(bytes: number[], flag = 0): Uint8Array {
  const m = new Uint8Array(5 + bytes.length);
  m[0] = flag;
  new DataView(m.buffer).setUint32(1, bytes.length);
  m.set(bytes, 5);
  return m;
}

/** The response head and, trailers-only or not, the grpc-status and grpc-message. */
async function outcome(stream: Http2Stream): Promise<{ status: string; grpc?: string; message?: string }> {
  const response = await stream.response;
  const status = response.find(([n]) => n === ":status")![1];
  let fields = response;
  if (!response.some(([n]) => n === "grpc-status")) {
    for await (const _ of stream) { /* the body is not looked at */ }
    fields = (await stream.trailers) ?? [];
  }
  const get = (name: string) => fields.find(([n]) => n === name)?.[1];
  return { status, grpc: get("grpc-status"), message: get("grpc-message") };
}

async function withRawClient(
  fn: (open: (h: HeaderList, body?: Uint8Array, end?: boolean) => Http2Stream) => Promise<void>,
  options: Partial<ChildServerOptions> = {},
): Promise<void> {
  const s = await startTestServer({ maxRecvMessageBytes: 1024, ...options });
  const { conn } = await connectClient(s.ports.plaintext);
  try {
    await fn((h, body, end = true) => {
      const stream = conn.request(h, { endStream: end && body === undefined });
      if (body) void stream.write(body).catch(() => {});
      if (body && end) stream.end();
      return stream;
    });
  } finally {
    conn.close();
    await conn.closed;
    await s.close();
  }
}

const cases: {
  name: string;
  headers: HeaderList;
  body?: Uint8Array;
  want: { status: string; grpc?: string };
}[] = [
  { name: "GET is 405", headers: head("/test.T/Echo", [], "GET"), want: { status: "405" } },
  {
    name: "a content-type other than application/grpc is 415",
    headers: head("/test.T/Echo", [], "POST", "application/json"),
    body: message([1]),
    want: { status: "415" },
  },
  {
    name: "an unknown method is trailers-only UNIMPLEMENTED",
    headers: head("/test.T/Nope"),
    body: message([1]),
    want: { status: "200", grpc: "12" },
  },
  {
    name: "a compressed message under identity is INTERNAL",
    headers: head("/test.T/Echo"),
    body: message([1], 1),
    want: { status: "200", grpc: "13" },
  },
  {
    name: "a compressed message under gzip is UNIMPLEMENTED",
    headers: head("/test.T/Echo", [["grpc-encoding", "gzip"]]),
    body: message([1], 1),
    want: { status: "200", grpc: "12" },
  },
  {
    name: "a message over the limit is RESOURCE_EXHAUSTED",
    headers: head("/test.T/Echo"),
    body: message(new Array(1025).fill(0)),
    want: { status: "200", grpc: "8" },
  },
  // Announced only: the prefix says 4 GiB, nothing is buffered for it.
  {
    name: "a 4 GiB prefix is RESOURCE_EXHAUSTED at once",
    headers: head("/test.T/Chat"),
    body: new Uint8Array([0, 255, 255, 255, 255]),
    want: { status: "200", grpc: "8" },
  },
  {
    name: "a request cut inside a message is INTERNAL",
    headers: head("/test.T/Echo"),
    body: message([1, 2, 3]).subarray(0, 6),
    want: { status: "200", grpc: "13" },
  },
  {
    name: "a unary call with no message is UNIMPLEMENTED",
    headers: head("/test.T/Echo"),
    want: { status: "200", grpc: "12" },
  },
  {
    name: "a unary call with two messages is UNIMPLEMENTED",
    headers: head("/test.T/Echo"),
    body: new Uint8Array([...message([1]), ...message([2])]),
    want: { status: "200", grpc: "12" },
  },
  {
    name: "a well-formed call is OK (the control case)",
    headers: head("/test.T/Echo"),
    body: message([1]),
    want: { status: "200", grpc: "0" },
  },
];
for (const c of cases) {
  Deno.test(`codec server, raw frames: ${c.name}`, async () => {
    await withRawClient(async (open) => {
      const got = await within(outcome(open(c.headers, c.body)), 5000, c.name);
      assert.equal(got.status, c.want.status, JSON.stringify(got));
      assert.equal(got.grpc, c.want.grpc, JSON.stringify(got));
    });
  });
}

Deno.test("codec server, raw frames: streams over maxStreams are refused (REFUSED_STREAM)", async () => {
  await withRawClient(async (open) => {
    const a = open(head("/test.T/Chat"), undefined, false);
    const b = open(head("/test.T/Chat"), undefined, false);
    const c = open(head("/test.T/Chat"), undefined, false);
    const closed = await within(c.closed, 5000, "third stream");
    assert.equal(closed.code, REFUSED_STREAM);
    assert.equal(a.isClosed || b.isClosed, false, "the first two stay open");
    a.reset();
    b.reset();
  }, { maxStreams: 2 });
});

Deno.test("codec server, raw frames: a GOAWAY from the client mid-stream ends its calls, and the server serves on", async () => {
  const s = await startTestServer();
  try {
    const { conn } = await connectClient(s.ports.plaintext);
    const chat = conn.request(head("/test.T/Chat"));
    await chat.write(message([7]));
    await within(chat.response, 5000, "chat head");
    conn.close(1, "hostile"); // GOAWAY PROTOCOL_ERROR with a stream open
    await conn.closed;
    await within(
      (async () => {
        while (s.seen.chatCancelled === 0) await new Promise((r) => setTimeout(r, 20));
      })(),
      5000,
      "the handler saw the call cancelled",
    );
    const next = await connectClient(s.ports.plaintext);
    const echo = next.conn.request(head("/test.T/Echo"));
    await echo.write(message([6]));
    echo.end();
    const got = await within(outcome(echo), 5000, "echo");
    next.conn.close();
    await next.conn.closed;
    assert.equal(got.grpc, "0", "a new connection is served");
  } finally {
    await s.close();
  }
});

Deno.test("codec server: keepalive closes a connection whose client never answers a PING", async () => {
  const s = await startTestServer({ keepaliveIntervalMs: 100, keepaliveTimeoutMs: 100 });
  try {
    const socket = net.connect(s.ports.plaintext, "127.0.0.1");
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => {});
    socket.on("data", () => {}); // read and never answer
    // The preface and an empty SETTINGS: a live HTTP/2 client that then goes silent.
    socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    socket.write(new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]));
    await within(closed, 3000, "the server closes the silent connection");
    assert.equal(s.server.connections, 0);
  } finally {
    await s.close();
  }
});
