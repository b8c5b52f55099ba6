/**
 * What the agent's gRPC channel refuses, against a scripted server on the real HTTP/2 codec: messages
 * over the channel's limit, a compressed flag, a second answer to a unary call, a grpc-status that is
 * not a code, a content-type that is not gRPC's. A refused call resets its stream (RST_STREAM CANCEL,
 * as the server sees it).
 */
import assert from "node:assert/strict";
import { CANCEL } from "../../shared/internal/http2/frame.ts";
import type { HeaderList } from "../../shared/internal/http2/headers.ts";
import type { Http2Stream, StreamClose } from "../../shared/internal/http2/stream.ts";
import { messagePrefix } from "../../shared/internal/grpc/messages.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  GRPC_STATUS,
  GrpcChannel,
  type GrpcChannelOptions,
  type GrpcStatus,
  type UnaryResult,
} from "./grpc_channel.ts";
import { framed, GRPC_HEAD, requestMessages, startScriptedServer } from "./grpc_channel_test_support.ts";

const text = (s: string) => new TextEncoder().encode(s);

/**
 * One unary call against a server whose streams `respond` answers (after reading the request); the
 * result, and how the server saw the stream close.
 */
async function unaryAgainst(
  respond: (stream: Http2Stream) => void,
  options: Partial<GrpcChannelOptions> = {},
): Promise<{ result: UnaryResult; close: StreamClose }> {
  const closes: Promise<StreamClose>[] = [];
  const server = await startScriptedServer(async ({ stream }) => {
    closes.push(stream.closed);
    await requestMessages(stream);
    respond(stream);
  });
  const channel = new GrpcChannel({ address: `127.0.0.1:${server.port}`, plaintext: true, ...options });
  try {
    const result = await within(channel.unary("/t.T/M", text("q")), 5000, "the call");
    const close = await within(closes[0], 5000, "the server's stream closed");
    return { result, close };
  } finally {
    channel.close();
    await server.close();
  }
}

const RESET_BY_CLIENT: StreamClose = { code: CANCEL, remote: true };

Deno.test("grpc_channel: a message over the limit is RESOURCE_EXHAUSTED on its prefix, the stream cancelled (default 4 MiB, as grpc-js)", async () => {
  const over = (n: number) => (s: Http2Stream) => {
    s.respond(GRPC_HEAD);
    void s.write(messagePrefix(n)); // the prefix alone: the body never comes
  };
  const dflt = await unaryAgainst(over(DEFAULT_MAX_MESSAGE_BYTES + 1));
  assert.equal(dflt.result.status.code, GRPC_STATUS.RESOURCE_EXHAUSTED, dflt.result.status.details);
  assert.match(dflt.result.status.details, /larger than max \(4194305 vs\. 4194304\)/);
  assert.deepEqual(dflt.close, RESET_BY_CLIENT);
  const small = await unaryAgainst(over(101), { maxMessageBytes: 100 });
  assert.equal(small.result.status.code, GRPC_STATUS.RESOURCE_EXHAUSTED, small.result.status.details);
  assert.deepEqual(small.close, RESET_BY_CLIENT);
  const atLimit = await unaryAgainst((s) => {
    s.respond(GRPC_HEAD);
    void s.write(framed(new Uint8Array(100)));
    s.end([["grpc-status", "0"]]);
  }, { maxMessageBytes: 100 });
  assert.equal(atLimit.result.message?.length, 100, "a message at the limit is taken");
});

Deno.test("grpc_channel: a compressed flag (none was offered) is INTERNAL, the stream cancelled", async () => {
  const { result, close } = await unaryAgainst((s) => {
    s.respond(GRPC_HEAD);
    const m = framed(text("zz"));
    m[0] = 1;
    void s.write(m);
  });
  assert.deepEqual(result.status, {
    code: GRPC_STATUS.INTERNAL,
    details: "Compressed flag set with identity encoding",
  });
  assert.deepEqual(close, RESET_BY_CLIENT);
});

Deno.test("grpc_channel unary: a second answer cancels the call (grpc-js's Too many responses received); OK without one is No message received", async () => {
  const endless = await unaryAgainst((s) => {
    s.respond(GRPC_HEAD);
    void (async () => {
      // Answers until the client resets the stream: the client must not collect them.
      try {
        for (let i = 0; i < 10_000; i++) await s.write(framed(text(`answer ${i}`)));
      } catch {
        // reset by the client
      }
    })();
  });
  assert.deepEqual(endless.result, {
    status: { code: GRPC_STATUS.UNIMPLEMENTED, details: "Too many responses received" },
  });
  assert.deepEqual(endless.close, RESET_BY_CLIENT);
  const none = await unaryAgainst((s) =>
    s.respond([...GRPC_HEAD, ["grpc-status", "0"]], { endStream: true })
  );
  assert.deepEqual(none.result, {
    status: { code: GRPC_STATUS.UNIMPLEMENTED, details: "No message received" },
  });
  const one = await unaryAgainst((s) => {
    s.respond(GRPC_HEAD);
    void s.write(framed(text("the answer")));
    s.end([["grpc-status", "0"]]);
  });
  assert.deepEqual(one.result.status, { code: GRPC_STATUS.OK, details: "" });
  assert.equal(new TextDecoder().decode(one.result.message), "the answer");
});

/** The status of a call whose server ends it with trailers `trailers` (after no message). */
async function statusWith(head: HeaderList, trailers?: HeaderList): Promise<GrpcStatus> {
  const { result } = await unaryAgainst((s) => {
    if (trailers === undefined) return s.respond(head, { endStream: true });
    s.respond(head);
    s.end(trailers);
  });
  return result.status;
}

Deno.test("grpc_channel: grpc-status that is not a code is UNKNOWN, naming it; a code over 16 is UNKNOWN; spaces around a code are allowed (gRPC core's SimpleAtoi)", async () => {
  for (const value of ["abc", "-1", "7.0"]) {
    const s = await statusWith(GRPC_HEAD, [["grpc-status", value], ["grpc-message", "m"]]);
    assert.deepEqual(
      s,
      { code: GRPC_STATUS.UNKNOWN, details: `grpc-status ${value}: m` },
      JSON.stringify(value),
    );
  }
  const over = await statusWith(GRPC_HEAD, [["grpc-status", "17"], ["grpc-message", "m"]]);
  assert.deepEqual(over, { code: GRPC_STATUS.UNKNOWN, details: "grpc-status 17: m" });
  const empty = await statusWith(GRPC_HEAD, [["grpc-status", ""], ["grpc-message", "m"]]);
  assert.deepEqual(empty, { code: GRPC_STATUS.UNKNOWN, details: "grpc-status : m" });
  for (const value of [" 7 ", "+7", "07"]) {
    const s = await statusWith(GRPC_HEAD, [["grpc-status", value], ["grpc-message", "m"]]);
    assert.deepEqual(s, { code: GRPC_STATUS.PERMISSION_DENIED, details: "m" }, JSON.stringify(value));
  }
  const ok = await statusWith([...GRPC_HEAD, ["grpc-status", "7"], ["grpc-message", "no"]]);
  assert.deepEqual(ok, { code: GRPC_STATUS.PERMISSION_DENIED, details: "no" });
});

Deno.test("grpc_channel: content-type application/grpc and application/grpc+<format> are gRPC; grpc-web and others are not", async () => {
  for (const type of ["application/grpc", "application/grpc+proto", "application/grpc+json"]) {
    const { result } = await unaryAgainst((s) => {
      s.respond([[":status", "200"], ["content-type", type]]);
      void s.write(framed(text("a")));
      s.end([["grpc-status", "0"]]);
    });
    assert.equal(result.status.code, GRPC_STATUS.OK, `${type}: ${result.status.details}`);
  }
  for (
    const type of [
      "application/grpc-web",
      "application/grpc-web+proto",
      "application/grpcx",
      "application/grpc;charset=x",
      "text/plain",
      "",
    ]
  ) {
    const head: HeaderList = [[":status", "200"]];
    if (type) head.push(["content-type", type]);
    const { result, close } = await unaryAgainst((s) => {
      s.respond(head);
      void s.write(framed(text("a")));
    });
    assert.equal(result.status.code, GRPC_STATUS.UNKNOWN, `${type}: ${result.status.details}`);
    assert.match(result.status.details, /is not gRPC/, type);
    assert.deepEqual(close, RESET_BY_CLIENT, type);
  }
});

Deno.test("grpc_channel: a response head with grpc-status that does not end the stream is refused and the stream reset, not left open", async () => {
  const { result, close } = await unaryAgainst((s) => {
    s.respond([...GRPC_HEAD, ["grpc-status", "0"]]); // no END_STREAM
    void s.write(framed(text("late")));
  });
  assert.equal(result.status.code, GRPC_STATUS.INTERNAL, result.status.details);
  assert.match(result.status.details, /grpc-status 0 but does not end the stream/);
  assert.deepEqual(close, RESET_BY_CLIENT);
});

Deno.test("grpc_channel: at the peer's max concurrent streams a call goes to a new connection; the first call goes on", async () => {
  const first = Promise.withResolvers<Http2Stream>();
  const server = await startScriptedServer(
    async ({ stream, connectionIndex }) => {
      await requestMessages(stream);
      if (connectionIndex === 0) return first.resolve(stream); // held open
      stream.respond(GRPC_HEAD);
      await stream.write(framed(text(`on connection ${connectionIndex}`)));
      stream.end([["grpc-status", "0"]]);
    },
    undefined,
    { maxConcurrentStreams: 1 },
  );
  const channel = new GrpcChannel({ address: `127.0.0.1:${server.port}`, plaintext: true });
  try {
    const held = channel.call("/t.T/Held", () => {});
    held.end();
    const stream = await within(first.promise, 5000, "the first call at the server");
    await within(
      (async () => {
        while (!held.connection?.peerSettingsReceived) await new Promise((r) => setTimeout(r, 5));
      })(),
      5000,
      "the server's SETTINGS (1 stream) at the client",
    );
    const second = await within(channel.unary("/t.T/M", text("q")), 5000, "the second call");
    assert.deepEqual(second.status, { code: GRPC_STATUS.OK, details: "" });
    assert.equal(new TextDecoder().decode(second.message), "on connection 1");
    assert.equal(server.connections.length, 2);
    stream.respond([...GRPC_HEAD, ["grpc-status", "0"]], { endStream: true });
    assert.deepEqual(await within(held.status, 5000, "the first call"), {
      code: GRPC_STATUS.OK,
      details: "",
    });
    // The replaced connection closes once its last call is done; the newer one stays for the next calls.
    await within(
      (async () => {
        while (!server.connections[0].closed) await new Promise((r) => setTimeout(r, 10));
      })(),
      5000,
      "the full connection closed after its last call",
    );
    assert.deepEqual(server.connections.map((c) => [c.closed, c.goaway]), [[true, false], [false, false]]);
  } finally {
    channel.close();
    await server.close();
  }
});
