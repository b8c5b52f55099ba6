/**
 * An HTTP/2 stream forwarded to an HTTP/1.1 upstream, as Envoy does for a cluster without HTTP/2
 * protocol options: Istio's outbound cluster for a port whose protocol is `HTTP` has none (its
 * cluster builder sets HTTP/2 upstream only for HTTP2/GRPC ports, `h2UpgradePolicy: UPGRADE` or
 * `useClientProtocol`), so an h2c client (`curl --http2-prior-knowledge`) reaches an HTTP/1.1
 * application. The connection comes from the HTTP/1.1 endpoint pools (mutual TLS with ALPN
 * `istio-http/1.1` to a proxied endpoint), one request at a time on it.
 *
 * Request: the head of ./h1_head.ts, then the body as it comes (by its Content-Length, else
 * chunked); request trailers are dropped and a response's chunked trailers too, as Envoy's HTTP/1
 * codec does without `enable_trailers` (Istio does not set it). `expect: 100-continue` is answered
 * by the proxy (an informational 100) and not forwarded, as for HTTP/1.1 clients; interim 1xx
 * responses from the upstream are dropped. Response: the head parsed by the HTTP/1.1 parser (every
 * check of ../http/head.ts applies; a malformed head is a 502 `protocol error`), the body decoded
 * (Content-Length, chunked with ../http/chunked.ts's checks, or until close) into DATA frames; HEAD,
 * 204 and 304 have none. Flow control end to end: a chunk is read from one side only after the
 * previous one was framed or written on the other (the socket view pauses reading past its
 * high-water mark), so a slow HTTP/2 reader holds back the upstream through TCP, and a slow upstream
 * the client through the stream's window. A reset of the stream closes the upstream connection; an
 * upstream that closes mid-body resets the stream (INTERNAL_ERROR). A reused keep-alive connection
 * that closed before any response byte is replaced once when the request had no body (as the
 * HTTP/1.1 session does).
 *
 * @module
 */
import { INTERNAL_ERROR, NO_ERROR } from "../../shared/internal/http2/frame.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import { ascii } from "../http/chars.ts";
import { CHUNK_DATA, CHUNK_DONE, ChunkedDecoder } from "../http/chunked.ts";
import { writeHead } from "../http/body_copy.ts";
import { HeadParser } from "../http/head.ts";
import { EXPECT_CONTINUE, HttpError, RESPONSE } from "../http/http_head.ts";
import type { Upstream } from "../http/session_types.ts";
import type { SocketIo } from "../http/socket_io.ts";
import { type Http1Request, http1RequestHead, http2ResponseHeaders } from "./h1_head.ts";
import {
  countTimeout,
  discardRequest,
  localReply,
  type RelayContext,
  safely,
  TIMEOUT_REPLIES,
  upstreamTimeout,
} from "./relay.ts";
import { StreamTimers } from "./stream_timeouts.ts";
import { adaptRequestHead, type HeaderList } from "./request_head.ts";

const RESET_BEFORE_HEADERS = "upstream connect error or disconnect/reset before headers. reset reason: ";
const CRLF = ascii("\r\n");
const LAST_CHUNK = ascii("0\r\n\r\n");

const BODY_NONE = 0;
const BODY_LENGTH = 1;
const BODY_CHUNKED = 2;
const BODY_UNTIL_CLOSE = 3;

/** How one exchange on a connection ended: the connection's fate, or a retry on a new one. */
type Outcome = "reusable" | "closed" | "retry";

/** One stream's state shared with its timers. */
interface Exchange {
  /** The upstream connection in use; null while there is none. */
  io: SocketIo | null;
  /** A timer expired: the proxy answered (or reset the stream) and the connection is closed. */
  expired: boolean;
  /** Set before the first attempt. */
  timers: StreamTimers | null;
}

/**
 * Forwards the stream `down` with the request `headers` (after routing and policies) to `upstream`
 * as HTTP/1.1 (`xfccElement`: as ./h1_head.ts's `http1RequestHead` takes it) and its response back as HTTP/2 (see the module documentation). Failures before the
 * response head are answered by the proxy: 503 (connection failure, connection termination) or 502
 * (protocol error), gRPC-aware through ./relay.ts's {@link localReply}. Never rejects.
 *
 * Timeouts (`ctx.timeouts`) as on a stream relayed as HTTP/2 (./relay.ts's `relayStream`, Envoy's
 * router whatever the upstream codec): `--requestTimeout` until the whole request was received or
 * the response head was sent (408 `request timeout`), the route timeout (a gRPC request's
 * `grpc-timeout`, capped by it) from the whole request until the response ended (504 `upstream
 * request timeout`); after the response head the stream is reset (RST_STREAM NO_ERROR). On expiry
 * the HTTP/1.1 connection is closed, never given back to the pool: it may be mid-message, as
 * Envoy's upstream request reset closes an HTTP/1.1 connection.
 */
export async function relayToHttp1(
  down: Http2Stream,
  headers: HeaderList,
  upstream: Upstream,
  ctx: RelayContext,
  xfccElement: Uint8Array | null = null,
): Promise<void> {
  const timed = upstreamTimeout(headers, ctx);
  const adapted = adaptRequestHead(timed.headers);
  if (!adapted.ok) {
    localReply(down, ctx.contentType, { status: adapted.status, body: adapted.reason }, ctx.observer);
    return discardRequest(down);
  }
  const req = http1RequestHead(adapted, down.remoteEnded && down.bufferedBytes === 0, xfccElement);
  if (adapted.head.expect === EXPECT_CONTINUE && req.framing !== "none") {
    down.informational([[":status", "100"]]);
  }
  const isHead = adapted.method === "HEAD";
  const x: Exchange = { io: null, expired: false, timers: null };
  x.timers = new StreamTimers(down, ctx.timeouts?.requestTimeoutMs ?? 0, timed.upstreamMs, (kind) => {
    x.expired = true;
    countTimeout(kind, ctx);
    x.io?.destroy();
    if (down.headersSent) return safely(() => down.reset(NO_ERROR));
    localReply(down, ctx.contentType, TIMEOUT_REPLIES[kind], ctx.observer);
    // With a connection, its request pump drops the rest of the body (the writes fail).
    if (x.io === null) void discardRequest(down);
  });
  try {
    await relayOn(down, req, isHead, upstream, ctx, x);
  } finally {
    x.timers?.done();
  }
}

/** The attempts of {@link relayToHttp1}: an idle connection, or a new one (once more for a retry). */
async function relayOn(
  down: Http2Stream,
  req: Http1Request,
  isHead: boolean,
  upstream: Upstream,
  ctx: RelayContext,
  x: Exchange,
): Promise<void> {
  for (let attempt = 0;; attempt++) {
    let io = attempt === 0 ? upstream.idle() : null;
    const reused = io !== null;
    if (io === null) {
      try {
        io = await upstream.connect();
      } catch (e) {
        if (down.isClosed || x.expired) return;
        const reason = e instanceof Error ? e.message : String(e);
        ctx.observer.upstreamError("connect_failure");
        ctx.log.warn("upstream connection failed", { peer: ctx.peer, target: ctx.target, reason });
        localReply(down, ctx.contentType, {
          status: 503,
          body: `${RESET_BEFORE_HEADERS}connection failure, transport failure reason: ${reason}`,
        }, ctx.observer);
        return discardRequest(down);
      }
    }
    if (down.isClosed || x.expired) {
      upstream.release(io, !x.expired);
      return;
    }
    x.io = io;
    const outcome = await exchange(down, io, req, isHead, reused, ctx, x);
    x.io = null;
    if (outcome === "retry") {
      upstream.release(io, false);
      continue;
    }
    upstream.release(io, outcome === "reusable");
    return;
  }
}

/** One request and response on `io`. */
async function exchange(
  down: Http2Stream,
  io: SocketIo,
  req: Http1Request,
  isHead: boolean,
  reused: boolean,
  ctx: RelayContext,
  x: Exchange,
): Promise<Outcome> {
  // Until the connection is given back: a reset stream closes it (it may be mid-message).
  let active = true;
  down.closed.then((c) => {
    if (active && c.code !== NO_ERROR) io.destroy();
  });
  const inBefore = io.bytesIn;
  try {
    writeHead(io, req.head);
  } catch {
    // The pooled connection closed under us: no response comes, handled below.
  }
  let sent = req.framing === "none";
  if (!sent) pumpRequest(down, io, req.framing === "chunked").then((done) => (sent = done));

  const parser = new HeadParser(RESPONSE);
  const failure = await readResponseHead(io, parser);
  if (failure !== null) {
    active = false;
    io.destroy();
    if (down.isClosed || x.expired) return "closed";
    if (failure !== "") {
      ctx.observer.upstreamError("protocol_error");
      ctx.log.debug("malformed upstream response", { peer: ctx.peer, target: ctx.target, error: failure });
      localReply(
        down,
        ctx.contentType,
        { status: 502, body: RESET_BEFORE_HEADERS + "protocol error" },
        ctx.observer,
      );
      return "closed";
    }
    if (reused && io.bytesIn === inBefore && req.framing === "none") return "retry";
    ctx.observer.upstreamError("reset_before_response");
    localReply(down, ctx.contentType, {
      status: 503,
      body: RESET_BEFORE_HEADERS + "connection termination",
    }, ctx.observer);
    return "closed";
  }
  const h = parser.head;
  const status = h.status;
  const mode = isHead || status === 204 || status === 304
    ? BODY_NONE
    : h.chunked
    ? BODY_CHUNKED
    : h.contentLength >= 0
    ? BODY_LENGTH
    : BODY_UNTIL_CLOSE;
  const length = h.contentLength;
  const keepAlive = h.keepAlive && mode !== BODY_UNTIL_CLOSE;
  const endStream = mode === BODY_NONE || (mode === BODY_LENGTH && length === 0);
  if (down.isClosed || x.expired) {
    active = false;
    io.destroy();
    return "closed";
  }
  down.respond(http2ResponseHeaders(h), { endStream });
  x.timers?.responseStarted();
  ctx.observer.response(status, false);
  const copied = endStream ? "done" : await copyResponseBody(io, down, mode, length);
  active = false;
  if (x.expired) return "closed";
  x.timers?.done();
  if (copied === "done") {
    down.end();
    // A request body still on its way (the upstream answered early) leaves the connection unusable.
    return keepAlive && sent ? "reusable" : "closed";
  }
  if (copied === "cut") {
    ctx.observer.upstreamError("reset_during_response");
    down.reset(INTERNAL_ERROR);
  }
  return "closed";
}

/**
 * Reads the final response head into `parser` (interim 1xx heads are skipped). Returns null when
 * there is one; "" when the connection ended first; the parser's reason when the head is malformed
 * or is a 101 (no upgrade was asked for).
 */
async function readResponseHead(io: SocketIo, parser: HeadParser): Promise<string | null> {
  for (;;) {
    parser.reset();
    let c: Uint8Array | null = null;
    let end = -1;
    while (end < 0) {
      c = await nextChunk(io);
      if (c === null) return "";
      try {
        end = parser.feed(c);
      } catch (e) {
        return e instanceof HttpError ? e.message : String(e);
      }
    }
    if (end < c!.length) io.unread(c!.subarray(end));
    const status = parser.head.status;
    if (status === 101) return "101 Switching Protocols without an upgrade";
    if (status >= 200) return null;
  }
}

/**
 * Writes the request body from the stream to `io`, framed by its length (as is) or chunked. True
 * when all of it was written; false when the stream was reset (the connection is closed) or the
 * connection failed (the rest of the body is then read and dropped, the response side answering).
 */
async function pumpRequest(down: Http2Stream, io: SocketIo, chunked: boolean): Promise<boolean> {
  for (;;) {
    let chunk: Uint8Array | null;
    try {
      chunk = await down.read();
    } catch {
      io.destroy();
      return false;
    }
    try {
      if (chunk === null) {
        if (chunked) io.write(LAST_CHUNK);
        return true;
      }
      if (chunk.length === 0) continue;
      let ok: boolean;
      if (chunked) {
        io.cork();
        io.write(ascii(chunk.length.toString(16) + "\r\n"));
        io.write(chunk);
        ok = io.write(CRLF);
        io.uncork();
      } else ok = io.write(chunk);
      if (!ok) await io.drain();
    } catch {
      await discardRequest(down);
      return false;
    }
  }
}

/**
 * Copies the response body from `io` to the stream as DATA, decoded. "done" when it ended as
 * framed; "cut" when the upstream closed early or sent malformed chunked framing; "gone" when the
 * stream was reset.
 */
async function copyResponseBody(
  io: SocketIo,
  down: Http2Stream,
  mode: number,
  length: number,
): Promise<"done" | "cut" | "gone"> {
  let remaining = length;
  const dec = mode === BODY_CHUNKED ? new ChunkedDecoder(true, 502) : null;
  for (;;) {
    let c = await nextChunk(io);
    if (down.isClosed) return "gone";
    if (c === null) return mode === BODY_UNTIL_CLOSE ? "done" : "cut";
    try {
      if (dec !== null) {
        let i = 0;
        while (i < c.length) {
          const next = dec.step(c, i, c.length);
          if (dec.result === CHUNK_DATA && next > dec.dataStart) {
            await down.write(c.subarray(dec.dataStart, next));
          }
          i = next;
          if (dec.result === CHUNK_DONE) {
            if (i < c.length) io.unread(c.subarray(i));
            return "done";
          }
        }
        continue;
      }
      if (mode === BODY_LENGTH && c.length > remaining) {
        io.unread(c.subarray(remaining));
        c = c.subarray(0, remaining);
      }
      remaining -= c.length;
      await down.write(c);
      if (mode === BODY_LENGTH && remaining === 0) return "done";
    } catch (e) {
      return e instanceof HttpError ? "cut" : "gone";
    }
  }
}

/** The next chunk received on `io`, waiting for one; null at its end or on its error. */
async function nextChunk(io: SocketIo): Promise<Uint8Array | null> {
  for (;;) {
    let c: Uint8Array | null | undefined;
    try {
      c = io.read();
    } catch {
      return null;
    }
    if (c !== undefined) return c;
    await io.wait();
  }
}
