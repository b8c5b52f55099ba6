/**
 * The agent's gRPC channel: status mappings, and calls against a scripted server on the real HTTP/2
 * codec (trailers after messages, trailers-only, resets, GOAWAY, a closed connection, deadline, cancel).
 */
import assert from "node:assert/strict";
import {
  CANCEL,
  ENHANCE_YOUR_CALM,
  NO_ERROR,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
} from "../../shared/internal/http2/frame.ts";
import { headerValue } from "../../shared/internal/http2/headers.ts";
import { Http2Error } from "../../shared/internal/http2/limits.ts";
import type { Http2Stream, StreamClose } from "../../shared/internal/http2/stream.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { GRPC_STATUS, GrpcChannel, type GrpcStatus, statusOfStreamError } from "./grpc_channel.ts";
import {
  answer,
  framed,
  GRPC_HEAD,
  requestMessages,
  type ScriptedCall,
  type ScriptedServer,
  startScriptedServer,
} from "./grpc_channel_test_support.ts";
import { portOf } from "./meshd_dial.ts";

Deno.test("grpc_channel: stream errors map as gRPC's PROTOCOL-HTTP2.md says; ports are read from addresses", () => {
  const resets: [Http2Error, number][] = [
    [new Http2Error(CANCEL, "connection closed"), GRPC_STATUS.UNAVAILABLE], // stream 0: the connection
    [new Http2Error(REFUSED_STREAM, "GOAWAY", 3), GRPC_STATUS.UNAVAILABLE],
    [new Http2Error(CANCEL, "reset", 3), GRPC_STATUS.CANCELLED],
    [new Http2Error(ENHANCE_YOUR_CALM, "reset", 3), GRPC_STATUS.RESOURCE_EXHAUSTED],
    [new Http2Error(PROTOCOL_ERROR, "reset", 3), GRPC_STATUS.INTERNAL],
    [new Http2Error(0, "reset NO_ERROR", 3), GRPC_STATUS.INTERNAL],
  ];
  for (const [e, grpc] of resets) assert.equal(statusOfStreamError(e), grpc, e.message);
  assert.equal(portOf("10.0.0.1:15012"), 15012);
  assert.equal(portOf("[::1]:15012"), 15012);
  assert.throws(() => portOf("meshd"), /no port/);
});

const text = (s: string) => new TextEncoder().encode(s);
const decode = (m: Uint8Array) => new TextDecoder().decode(m);

/** One call on a fresh plain-text channel to `server`: the messages received and the status. */
async function callOnce(
  server: ScriptedServer,
  options: { deadlineMs?: number; cancelAfterMs?: number; end?: boolean } = {},
): Promise<{ messages: string[]; status: GrpcStatus }> {
  const channel = new GrpcChannel({ address: `127.0.0.1:${server.port}`, plaintext: true });
  const messages: string[] = [];
  try {
    const call = channel.call("/test.T/Chat", (m) => messages.push(decode(m)), {
      deadlineMs: options.deadlineMs,
    });
    call.write(text("hello"));
    if (options.end) call.end();
    if (options.cancelAfterMs !== undefined) setTimeout(() => call.cancel(), options.cancelAfterMs);
    return { messages, status: await within(call.status, 5000, "the call's status") };
  } finally {
    channel.close();
  }
}

/** Runs `fn` with a scripted server whose streams go to `handler`; closes it afterwards. */
async function withServer(
  handler: Parameters<typeof startScriptedServer>[0],
  fn: (server: ScriptedServer) => Promise<void>,
): Promise<void> {
  const server = await startScriptedServer(handler);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("grpc_channel: the status in the trailers after the messages is read (grpc-message percent-decoded)", async () => {
  const received: string[] = [];
  await withServer(async ({ stream }) => {
    const path = headerValue(stream.headers, ":path");
    if (path !== "/test.T/Chat") return;
    received.push(...(await requestMessages(stream)).map(decode));
    await answer(stream, [text("one"), text("two")], 7, "dénied: 100%");
  }, async (server) => {
    const { messages, status } = await callOnce(server, { end: true });
    assert.deepEqual(received, ["hello"], "the request message, framed as gRPC says");
    assert.deepEqual(messages, ["one", "two"]);
    assert.deepEqual(status, { code: GRPC_STATUS.PERMISSION_DENIED, details: "dénied: 100%" });
    const head = server.requests[0];
    for (
      const [name, value] of [[":method", "POST"], ["content-type", "application/grpc"], ["te", "trailers"]]
    ) {
      assert.equal(headerValue(head, name), value, name);
    }
  });
  await withServer(({ stream }) => answer(stream, [text("only")], 0), async (server) => {
    assert.deepEqual(await callOnce(server), { messages: ["only"], status: { code: 0, details: "" } });
  });
});

Deno.test("grpc_channel: a trailers-only answer, a body without status, a non-200 and a non-gRPC answer", async () => {
  const cases: [string, (s: Http2Stream) => void, number, RegExp][] = [
    [
      "trailers-only",
      (s) =>
        s.respond([...GRPC_HEAD, ["grpc-status", "16"], ["grpc-message", "no%20token"]], {
          endStream: true,
        }),
      GRPC_STATUS.UNAUTHENTICATED,
      /^no token$/,
    ],
    [
      "no grpc-status",
      (s) => {
        s.respond(GRPC_HEAD);
        s.end();
      },
      GRPC_STATUS.UNKNOWN,
      /without a grpc-status/,
    ],
    ["HTTP 503", (s) => s.respond([[":status", "503"]], { endStream: true }), GRPC_STATUS.UNAVAILABLE, /503/],
    [
      "text/html",
      (s) => s.respond([[":status", "200"], ["content-type", "text/html"]], { endStream: true }),
      GRPC_STATUS.UNKNOWN,
      /text\/html/,
    ],
    [
      "a cut message",
      (s) => {
        s.respond(GRPC_HEAD);
        void s.write(framed(text("whole")).subarray(0, 7));
        s.end([["grpc-status", "0"]]);
      },
      GRPC_STATUS.INTERNAL,
      /inside a message/,
    ],
  ];
  for (const [name, respond, code, details] of cases) {
    await withServer(({ stream }) => respond(stream), async (server) => {
      const { status } = await callOnce(server);
      assert.equal(status.code, code, `${name}: ${status.details}`);
      assert.match(status.details, details, name);
    });
  }
});

Deno.test("grpc_channel: RST_STREAM, GOAWAY and a closed connection mid-call end it with gRPC's statuses; the channel dials again", async () => {
  const cases: [string, (c: ScriptedCall) => void, number, RegExp][] = [
    ["RST_STREAM CANCEL", (c) => c.stream.reset(CANCEL), GRPC_STATUS.CANCELLED, /reset by the peer/],
    ["RST_STREAM REFUSED_STREAM", (c) => c.stream.reset(REFUSED_STREAM), GRPC_STATUS.UNAVAILABLE, /reset/],
    ["RST_STREAM INTERNAL_ERROR", (c) => c.stream.reset(2), GRPC_STATUS.INTERNAL, /reset/],
    [
      "GOAWAY then the connection closed",
      (c) => {
        c.connection.close();
        setTimeout(() => c.socket.destroy(), 50);
      },
      GRPC_STATUS.UNAVAILABLE,
      /connection to 127\.0\.0\.1:\d+ ended/,
    ],
    ["the socket destroyed", (c) => c.socket.destroy(), GRPC_STATUS.UNAVAILABLE, /ended/],
  ];
  for (const [name, misbehave, code, details] of cases) {
    let calls = 0;
    await withServer(async (c) => {
      if (calls++ > 0) return await answer(c.stream, [text("again")], 0);
      c.stream.respond(GRPC_HEAD);
      await c.stream.write(framed(text("first")));
      setTimeout(() => misbehave(c), 20);
    }, async (server) => {
      const channel = new GrpcChannel({ address: `127.0.0.1:${server.port}`, plaintext: true });
      try {
        const got: string[] = [];
        const first = channel.call("/test.T/Chat", (m) => got.push(decode(m)));
        const status = await within(first.status, 5000, name);
        assert.deepEqual(got, ["first"], name);
        assert.equal(status.code, code, `${name}: ${status.details}`);
        assert.match(status.details, details, name);
        const second = channel.call("/test.T/Chat", (m) => got.push(decode(m)));
        second.end();
        assert.deepEqual(await within(second.status, 5000, `${name}: again`), { code: 0, details: "" }, name);
        const dialled = name.startsWith("RST") ? 1 : 2;
        assert.equal(server.connections.length, dialled, `${name}: connections`);
      } finally {
        channel.close();
      }
    });
  }
});

Deno.test("grpc_channel: a deadline and a cancel reset the stream (grpc-timeout sent); close sends no GOAWAY", async () => {
  const ends: StreamClose[] = [];
  await withServer(async ({ stream }) => {
    stream.respond(GRPC_HEAD);
    ends.push(await stream.closed); // never answers: the client ends it
  }, async (server) => {
    const late = await callOnce(server, { deadlineMs: 200 });
    assert.equal(late.status.code, GRPC_STATUS.DEADLINE_EXCEEDED);
    assert.equal(headerValue(server.requests[0], "grpc-timeout"), "200m");
    const cancelled = await callOnce(server, { cancelAfterMs: 50 });
    assert.deepEqual(cancelled.status, { code: GRPC_STATUS.CANCELLED, details: "cancelled by the client" });
    await within(
      (async () => {
        while (ends.length < 2 || !server.connections.every((c) => c.closed)) {
          await new Promise((r) => setTimeout(r, 10));
        }
      })(),
      5000,
      "both streams reset and both connections closed",
    );
    assert.deepEqual(ends, [{ code: CANCEL, remote: true }, { code: CANCEL, remote: true }]);
    assert.deepEqual(server.connections.map((c) => c.goaway), [false, false], "no GOAWAY from the client");
  });
});

Deno.test("grpc_channel: RST_STREAM(NO_ERROR) right after the trailers (as meshd ends a call we did not half-close) keeps the messages and the status", async () => {
  for (const messages of [[], ["one"]]) {
    await withServer(async ({ stream }) => {
      stream.respond(GRPC_HEAD);
      for (const m of messages) void stream.write(framed(text(m)));
      stream.end([["grpc-status", "7"], ["grpc-message", "denied"]]);
      queueMicrotask(() => stream.reset(NO_ERROR));
      await stream.closed;
    }, async (server) => {
      const got = await callOnce(server); // writes one message and never half-closes
      assert.deepEqual(got, { messages, status: { code: GRPC_STATUS.PERMISSION_DENIED, details: "denied" } });
    });
  }
});
