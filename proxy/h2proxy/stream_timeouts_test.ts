/**
 * {@link StreamTimers} on server-role streams of the real HTTP/2 codec over loopback: the request
 * timer until the client's END_STREAM, the upstream timer from it, the response head stopping the
 * request timer, `done()` stopping both.
 */
import assert from "node:assert/strict";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import { connectClient, get } from "../../shared/internal/http2/connection_test_support.ts";
import { startEchoServer } from "../../shared/internal/http2/echo_test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { type StreamTimeoutKind, StreamTimers } from "./stream_timeouts.ts";

/** Long enough for a timer that must not fire to have fired on a busy machine. */
const QUIET_MS = 400;

interface Case {
  name: string;
  /** The client ends its request with the HEADERS frame. */
  endAtOnce: boolean;
  requestMs: number;
  upstreamMs: number;
  /** What the test does on the server stream once the timers run. */
  then: (down: Http2Stream, timers: StreamTimers, clientEnd: () => void) => void;
  /** The timer that fires, or null for none within {@link QUIET_MS}. */
  want: StreamTimeoutKind | null;
}

const CASES: Case[] = [
  {
    name: "whole request at once: the upstream timer",
    endAtOnce: true,
    requestMs: 50,
    upstreamMs: 50,
    then: () => {},
    want: "upstream",
  },
  {
    name: "request still open: the request timer",
    endAtOnce: false,
    requestMs: 50,
    upstreamMs: 50,
    then: () => {},
    want: "request",
  },
  {
    name: "request still open, no request timeout: nothing",
    endAtOnce: false,
    requestMs: 0,
    upstreamMs: 50,
    then: () => {},
    want: null,
  },
  {
    name: "the upstream timer starts at the client's END_STREAM",
    endAtOnce: false,
    requestMs: 0,
    upstreamMs: 50,
    then: (_d, _t, end) => end(),
    want: "upstream",
  },
  {
    name: "the response head stops the request timer",
    endAtOnce: false,
    requestMs: 50,
    upstreamMs: 0,
    then: (_d, t) => t.responseStarted(),
    want: null,
  },
  {
    name: "done() stops both",
    endAtOnce: true,
    requestMs: 50,
    upstreamMs: 50,
    then: (_d, t) => t.done(),
    want: null,
  },
];

Deno.test("StreamTimers: which timer fires, by the request's end, the response head and done()", async () => {
  const arrived: Http2Stream[] = [];
  const server = await startEchoServer(0, false, undefined, (s) => arrived.push(s));
  const { conn } = await connectClient(server.port);
  try {
    for (const c of CASES) {
      const up = conn.request(get("/", "POST"), { endStream: c.endAtOnce });
      await within(
        (async () => {
          while (arrived.length === 0) await new Promise((r) => setTimeout(r, 5));
        })(),
        2000,
        `the stream of ${c.name}`,
      );
      const down = arrived.shift()!;
      const fired: StreamTimeoutKind[] = [];
      const timers = new StreamTimers(down, c.requestMs, c.upstreamMs, (k) => fired.push(k));
      c.then(down, timers, () => up.end());
      try {
        await new Promise((r) => setTimeout(r, QUIET_MS));
        assert.deepEqual(fired, c.want === null ? [] : [c.want], c.name);
      } finally {
        timers.done();
        down.reset();
        up.reset();
      }
    }
  } finally {
    conn.close();
    await conn.closed;
    await server.close();
  }
});
