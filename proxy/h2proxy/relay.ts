/**
 * One proxied HTTP/2 stream: the downstream stream (the server role's, from the client) joined to an
 * upstream stream (the client role's, to the next hop), as Envoy's router does it for HTTP/2 on both
 * sides: the request headers as given, then body and trailers each way as they come, with the
 * codec's flow control end to end (a chunk is read from one side only after the previous one was
 * framed on the other, so a slow reader holds back the sender through the windows). A trailers-only
 * response (gRPC's errors) stays one HEADERS frame with END_STREAM. A reset on one side resets the
 * other. The proxy's own answers ({@link localReply}) are gRPC-aware: a request whose content-type is
 * `application/grpc*` gets a trailers-only response with `grpc-status` (../grpc/local_reply.ts), any
 * other a short text body. The stream's timeouts (./stream_timeouts.ts: `--requestTimeout`, the route
 * timeout, `grpc-timeout`) are Envoy's: see {@link relayStream}.
 *
 * @module
 */
import { CANCEL, INTERNAL_ERROR, NO_ERROR, REFUSED_STREAM } from "../../shared/internal/http2/frame.ts";
import { Http2Error } from "../../shared/internal/http2/limits.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import { grpcLocalReply, isGrpcContentType } from "../grpc/local_reply.ts";
import { formatGrpcTimeout, upstreamTimeoutMs } from "../grpc/grpc_timeout.ts";
import { type StreamTimeoutKind, type StreamTimeouts, StreamTimers } from "./stream_timeouts.ts";
import { type HeaderList, headerValue } from "./request_head.ts";
import type { Log, UpstreamErrorKind } from "../http/session_types.ts";

/** What a relay reports (the listener's counters). */
export interface StreamObserver {
  /**
   * A response head was sent downstream; `local` for the proxy's own replies; `head` the headers
   * sent, for a gRPC request (their `grpc-status` in a trailers-only response).
   */
  response(status: number, local: boolean, head?: HeaderList): void;
  /** A gRPC request's response ended downstream with `trailers` (none: ended without trailers). */
  trailers?(trailers: HeaderList | undefined): void;
  upstreamError(kind: UpstreamErrorKind): void;
}

/** How the proxy answers a request itself. */
export interface LocalReply {
  /** The HTTP status an HTTP client gets (and that the gRPC status is derived from). */
  status: number;
  /** The text body, or `grpc-message`. */
  body: string;
  /** Extra response headers (`www-authenticate`, `location`). */
  headers?: HeaderList;
  /** The gRPC status when not the one {@link grpcLocalReply} derives from `status` (a deadline). */
  grpcStatus?: number;
}

/** Request body octets read and dropped after a local reply before the rest is refused (RST_STREAM NO_ERROR). */
export const MAX_DISCARD_BYTES = 1024 * 1024;

/**
 * Answers a stream with the proxy's own response: trailers-only with `grpc-status` when the request
 * is gRPC (`requestContentType` `application/grpc*`), else `status` with a `text/plain` body.
 * Nothing is sent when the stream is already closed or answered. The caller still owns the request
 * body: {@link discardRequest} it unless a relay is reading it.
 */
export function localReply(
  down: Http2Stream,
  requestContentType: string | undefined,
  reply: LocalReply,
  observer: StreamObserver,
): void {
  if (down.isClosed || down.headersSent) return;
  try {
    let head: HeaderList | undefined;
    if (isGrpcContentType(requestContentType)) {
      head = grpcLocalReply(reply.status, reply.body, { grpcStatus: reply.grpcStatus, requestContentType });
      down.respond(head, { endStream: true });
    } else {
      const body = new TextEncoder().encode(reply.body);
      down.respond([
        [":status", String(reply.status)],
        ["content-type", "text/plain"],
        ["content-length", String(body.length)],
        ...(reply.headers ?? []),
      ], { endStream: body.length === 0 });
      if (body.length > 0) {
        down.write(body).catch(() => {});
        down.end();
      }
    }
    observer.response(reply.status, true, head);
  } catch {
    down.reset(INTERNAL_ERROR);
  }
}

/**
 * Reads and drops the rest of a request answered by the proxy, so that its DATA gives the
 * connection's window back; beyond {@link MAX_DISCARD_BYTES} the request is refused with RST_STREAM
 * NO_ERROR, as RFC 9113 section 8.1 lets a server do after a complete response. The reset is not
 * sent at once: the request's END_STREAM usually follows its HEADERS, and a reset that crossed it
 * could make a client drop the response.
 */
export async function discardRequest(down: Http2Stream): Promise<void> {
  let dropped = 0;
  try {
    for (;;) {
      const chunk = await down.read();
      if (chunk === null) return;
      dropped += chunk.length;
      if (dropped > MAX_DISCARD_BYTES) {
        down.reset(NO_ERROR);
        return;
      }
    }
  } catch {
    // Reset by the client: nothing left to drop.
  }
}

/** {@link localReply}, then {@link discardRequest}: a request the proxy answers itself. */
export function answerLocally(
  down: Http2Stream,
  requestContentType: string | undefined,
  reply: LocalReply,
  observer: StreamObserver,
): Promise<void> {
  localReply(down, requestContentType, reply, observer);
  return discardRequest(down);
}

/** Where a stream goes: opens the upstream stream with the headers to forward. */
export type OpenUpstream = (
  headers: HeaderList,
  endStream: boolean,
  cancelled: () => boolean,
) => Promise<Http2Stream>;

/** What a relay needs besides the two streams. */
export interface RelayContext {
  observer: StreamObserver;
  log: Log;
  /** The client, for logs. */
  peer: string;
  /** Where the stream goes, for logs (`<service> <address:port>`, or the application). */
  target: string;
  /** The request's content-type (gRPC replies depend on it). */
  contentType: string | undefined;
  /** The stream's timeouts; none when absent. */
  timeouts?: StreamTimeouts;
}

/**
 * Envoy's answers on expiry. The upstream timeout: the router's `onUpstreamTimeoutAbort`, 504
 * `upstream request timeout` (source/common/router/router.cc), a gRPC request getting it as a local
 * reply without an explicit gRPC status, so 14 UNAVAILABLE (`Grpc::Utility::httpToGrpcStatus(504)`),
 * trailers-only. The request timeout: the connection manager's `onRequestTimeout`, 408
 * `request timeout` (gRPC: 2 UNKNOWN, 408 being outside Envoy's table).
 */
export const TIMEOUT_REPLIES: Record<StreamTimeoutKind, LocalReply> = {
  upstream: { status: 504, body: "upstream request timeout" },
  request: { status: 408, body: "request timeout" },
};

/**
 * Forwards the downstream stream: opens the upstream stream with `headers` (END_STREAM when the
 * request has no body), copies the request body and trailers up and the response down. A failure to
 * open, or a reset before the response head, is answered with 503 (gRPC: UNAVAILABLE), as Envoy's
 * `upstream connect error or disconnect/reset before headers`. Never rejects.
 *
 * Timeouts (`ctx.timeouts`, ./stream_timeouts.ts), as Envoy's router under Istio's routes: the
 * upstream timeout is the route timeout, or for a gRPC request its `grpc-timeout` capped by the route
 * timeout (../grpc/grpc_timeout.ts; the header forwarded is rewritten to that value, as Envoy's
 * `toGrpcTimeout`). On expiry the upstream stream is reset (RST_STREAM CANCEL, what a gRPC client
 * sends at its deadline; Envoy's codec sends NO_ERROR for any local reset, which this mesh's server
 * proxy would read as a normal end) and, before the response head, the client gets
 * {@link TIMEOUT_REPLIES} (gRPC: trailers-only); after it, its stream is reset (RST_STREAM NO_ERROR,
 * as Envoy's `sendLocalReply` on a started response resets the stream, and gRPC clients report such a
 * reset as DEADLINE_EXCEEDED once their deadline passed). Counted as `upstream_rq_timeout` and the
 * listener's `downstream_rq_timeout`.
 */
export async function relayStream(
  down: Http2Stream,
  headers: HeaderList,
  open: OpenUpstream,
  ctx: RelayContext,
): Promise<void> {
  const grpc = isGrpcContentType(ctx.contentType);
  const timed = upstreamTimeout(headers, ctx);
  headers = timed.headers;
  let up: Http2Stream | undefined;
  let expired = false;
  const timers = new StreamTimers(down, ctx.timeouts?.requestTimeoutMs ?? 0, timed.upstreamMs, (kind) => {
    expired = true;
    countTimeout(kind, ctx);
    if (up === undefined) {
      // Still connecting: the open below resets the stream it gets; the request is dropped here.
      localReply(down, ctx.contentType, TIMEOUT_REPLIES[kind], ctx.observer);
      void discardRequest(down);
      return;
    }
    const opened = up;
    safely(() => opened.reset(CANCEL));
    if (down.headersSent) safely(() => down.reset(NO_ERROR));
    else localReply(down, ctx.contentType, TIMEOUT_REPLIES[kind], ctx.observer);
  });
  try {
    up = await openRetrying(down, headers, open, (s) => up = s);
  } catch (e) {
    timers.done();
    // The client reset its stream while it waited for a connection, or a timeout answered it.
    if (down.isClosed || expired) return;
    ctx.observer.upstreamError("connect_failure");
    ctx.log.warn("upstream connection failed", { peer: ctx.peer, target: ctx.target, reason: String(e) });
    localReply(down, ctx.contentType, {
      status: 503,
      body: `upstream connect error or disconnect/reset before headers. reset reason: connection failure, ` +
        `transport failure reason: ${e instanceof Error ? e.message : String(e)}`,
    }, ctx.observer);
    await discardRequest(down);
    return;
  }
  const upstream = up;
  if (expired) {
    safely(() => upstream.reset(CANCEL));
    return;
  }
  if (timers.active) upstream.trailers.then(() => timers.done(), () => timers.done());
  // A reset on either side ends the other; a normal end leaves the other to finish.
  down.closed.then((c) => {
    if (c.code !== NO_ERROR) safely(() => upstream.reset(CANCEL));
  });
  // After the upstream response head was forwarded (not after the proxy's own answer to a failure).
  let forwarded = false;
  upstream.closed.then((c) => {
    if (c.code !== NO_ERROR && forwarded) {
      safely(() => down.reset(c.code === CANCEL ? CANCEL : INTERNAL_ERROR));
    }
  });
  // The request body: when the upstream stream fails, what is left is dropped (see discardRequest).
  if (!upstream.localEnded) pump(down, upstream, false).catch(() => safely(() => upstream.reset(CANCEL)));
  let head: HeaderList;
  try {
    head = await upstream.response;
  } catch (e) {
    timers.done();
    if (expired) return;
    ctx.observer.upstreamError("reset_before_response");
    ctx.log.debug("upstream reset before the response", {
      peer: ctx.peer,
      target: ctx.target,
      reason: String(e),
    });
    localReply(down, ctx.contentType, {
      status: 503,
      body: "upstream connect error or disconnect/reset before headers. reset reason: remote reset",
    }, ctx.observer);
    return;
  }
  if (down.isClosed || expired) {
    timers.done();
    safely(() => upstream.reset(CANCEL));
    return;
  }
  // Trailers-only (gRPC errors) or a response without a body: one HEADERS frame with END_STREAM.
  const headersOnly = upstream.remoteEnded && upstream.bufferedBytes === 0 &&
    (await upstream.trailers) === undefined;
  if (expired) return;
  try {
    down.respond(head, { endStream: headersOnly });
    forwarded = true;
    timers.responseStarted();
  } catch {
    timers.done();
    safely(() => upstream.reset(CANCEL));
    return;
  }
  ctx.observer.response(Number(headerValue(head, ":status")) || 0, false, grpc ? head : undefined);
  const ended = grpc ? (t: HeaderList | undefined) => ctx.observer.trailers?.(t) : undefined;
  if (!headersOnly) pump(upstream, down, true, ended).catch(() => safely(() => down.reset(CANCEL)));
}

/**
 * The upstream timeout of a stream (ms; 0 none): the route timeout, or for a gRPC request its
 * `grpc-timeout` capped by the route timeout (../grpc/grpc_timeout.ts), with the headers to forward
 * (a gRPC request's `grpc-timeout` rewritten to that value, as Envoy's `toGrpcTimeout`).
 */
export function upstreamTimeout(
  headers: HeaderList,
  ctx: RelayContext,
): { headers: HeaderList; upstreamMs: number } {
  const grpc = isGrpcContentType(ctx.contentType);
  const upstreamMs = upstreamTimeoutMs(
    grpc,
    headerValue(headers, "grpc-timeout"),
    ctx.timeouts?.routeTimeoutMs ?? 0,
  );
  return { headers: grpc && upstreamMs > 0 ? withGrpcTimeout(headers, upstreamMs) : headers, upstreamMs };
}

/** Counts and logs an expired timer of a stream (`upstream_rq_timeout` or `downstream_rq_timeout`). */
export function countTimeout(kind: StreamTimeoutKind, ctx: RelayContext): void {
  if (kind === "upstream") ctx.observer.upstreamError("timeout");
  else ctx.timeouts?.onRequestTimeout?.();
  ctx.log.debug("stream timeout", { peer: ctx.peer, target: ctx.target, timeout: kind });
}

/** `headers` with `grpc-timeout` set to `ms` (Envoy's `toGrpcTimeout`), in place of the client's. */
function withGrpcTimeout(headers: HeaderList, ms: number): HeaderList {
  const out: HeaderList = headers.filter(([n]) => n !== "grpc-timeout");
  out.push(["grpc-timeout", formatGrpcTimeout(ms)]);
  return out;
}

/**
 * Opens the upstream stream; a stream the peer refused before processing it (RST_STREAM or GOAWAY
 * with REFUSED_STREAM: its connection was closing or full) is opened once more, on another
 * connection, when the request has no body (so nothing was consumed), as Istio's default retry
 * policy (`refused-stream`) does. `opened` is told each stream as soon as it is open.
 */
async function openRetrying(
  down: Http2Stream,
  headers: HeaderList,
  open: OpenUpstream,
  opened: (up: Http2Stream) => void,
): Promise<Http2Stream> {
  const noBody = down.remoteEnded && down.bufferedBytes === 0;
  const up = await open(headers, noBody, () => down.isClosed);
  opened(up);
  if (!noBody) return up;
  try {
    await up.response;
    return up;
  } catch (e) {
    if (!(e instanceof Http2Error) || e.code !== REFUSED_STREAM || down.isClosed) return up;
    const again = await open(headers, true, () => down.isClosed);
    opened(again);
    return again;
  }
}

/**
 * Copies the body and trailers of `from`'s received side to `to`'s sending side (`ended` is told the
 * trailers forwarded). `from` failing (a reset) resets `to`. `to` failing: for the response (`stopSource`) the upstream is reset, the client
 * being gone; for the request the rest is dropped, the response path answering the client.
 */
async function pump(
  from: Http2Stream,
  to: Http2Stream,
  stopSource: boolean,
  ended?: (trailers: HeaderList | undefined) => void,
): Promise<void> {
  for (;;) {
    let chunk: Uint8Array | null;
    try {
      chunk = await from.read();
    } catch {
      to.reset(CANCEL);
      return;
    }
    try {
      if (chunk === null) {
        const trailers = await from.trailers;
        to.end(trailers);
        ended?.(trailers);
        return;
      }
      await to.write(chunk);
    } catch {
      if (stopSource) from.reset(CANCEL);
      else await discardRequest(from);
      return;
    }
  }
}

/** Runs `fn`, ignoring what it throws (a reset of a stream its connection already dropped). */
export function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // Nothing left to reset.
  }
}

/**
 * Runs the handling of one stream so that nothing it throws or rejects escapes: an unhandled
 * rejection would end the process. A failure is logged (error) and the stream reset.
 */
export function guardStream(stream: Http2Stream, log: Log, peer: string, run: () => Promise<void>): void {
  let p: Promise<void>;
  try {
    p = run();
  } catch (e) {
    p = Promise.reject(e);
  }
  p.catch((e) => {
    log.error("HTTP/2 stream failed", { peer, error: String(e) });
    safely(() => stream.reset(INTERNAL_ERROR));
  });
}
