/**
 * One proxied HTTP/2 stream: the downstream stream (the server role's, from the client) joined to an
 * upstream stream (the client role's, to the next hop), as Envoy's router does it for HTTP/2 on both
 * sides: the request headers as given, then body and trailers each way as they come, with the
 * codec's flow control end to end (a chunk is read from one side only after the previous one was
 * framed on the other, so a slow reader holds back the sender through the windows). A trailers-only
 * response (gRPC's errors) stays one HEADERS frame with END_STREAM. A reset on one side resets the
 * other. The proxy's own answers ({@link localReply}) are gRPC-aware: a request whose content-type is
 * `application/grpc*` gets a trailers-only response with `grpc-status` (../grpc/local_reply.ts), any
 * other a short text body.
 *
 * @module
 */
import { CANCEL, INTERNAL_ERROR, NO_ERROR, REFUSED_STREAM } from "../http2/frame.ts";
import { Http2Error } from "../http2/limits.ts";
import type { Http2Stream } from "../http2/stream.ts";
import { grpcLocalReply, isGrpcContentType } from "../grpc/local_reply.ts";
import { type HeaderList, headerValue } from "./request_head.ts";
import type { Log, UpstreamErrorKind } from "../http/session_types.ts";

/** What a relay reports (the listener's counters). */
export interface StreamObserver {
  /** A response head was sent downstream; `local` for the proxy's own replies. */
  response(status: number, local: boolean): void;
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
    if (isGrpcContentType(requestContentType)) {
      down.respond(
        grpcLocalReply(reply.status, reply.body, { grpcStatus: reply.grpcStatus, requestContentType }),
        { endStream: true },
      );
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
    observer.response(reply.status, true);
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
}

/**
 * Forwards the downstream stream: opens the upstream stream with `headers` (END_STREAM when the
 * request has no body), copies the request body and trailers up and the response down. A failure to
 * open, or a reset before the response head, is answered with 503 (gRPC: UNAVAILABLE), as Envoy's
 * `upstream connect error or disconnect/reset before headers`. Never rejects.
 */
export async function relayStream(
  down: Http2Stream,
  headers: HeaderList,
  open: OpenUpstream,
  ctx: RelayContext,
): Promise<void> {
  let up: Http2Stream;
  try {
    up = await openRetrying(down, headers, open);
  } catch (e) {
    // The client reset its stream while it waited for a connection: nothing to answer.
    if (down.isClosed) return;
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
  // A reset on either side ends the other; a normal end leaves the other to finish.
  down.closed.then((c) => {
    if (c.code !== NO_ERROR) safely(() => up.reset(CANCEL));
  });
  // After the upstream response head was forwarded (not after the proxy's own answer to a failure).
  let forwarded = false;
  up.closed.then((c) => {
    if (c.code !== NO_ERROR && forwarded) {
      safely(() => down.reset(c.code === CANCEL ? CANCEL : INTERNAL_ERROR));
    }
  });
  // The request body: when the upstream stream fails, what is left is dropped (see discardRequest).
  if (!up.localEnded) pump(down, up, false).catch(() => safely(() => up.reset(CANCEL)));
  let head: HeaderList;
  try {
    head = await up.response;
  } catch (e) {
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
  if (down.isClosed) {
    safely(() => up.reset(CANCEL));
    return;
  }
  // Trailers-only (gRPC errors) or a response without a body: one HEADERS frame with END_STREAM.
  const headersOnly = up.remoteEnded && up.bufferedBytes === 0 && (await up.trailers) === undefined;
  try {
    down.respond(head, { endStream: headersOnly });
    forwarded = true;
  } catch {
    safely(() => up.reset(CANCEL));
    return;
  }
  ctx.observer.response(Number(headerValue(head, ":status")) || 0, false);
  if (!headersOnly) pump(up, down, true).catch(() => safely(() => down.reset(CANCEL)));
}

/**
 * Opens the upstream stream; a stream the peer refused before processing it (RST_STREAM or GOAWAY
 * with REFUSED_STREAM: its connection was closing or full) is opened once more, on another
 * connection, when the request has no body (so nothing was consumed), as Istio's default retry
 * policy (`refused-stream`) does.
 */
async function openRetrying(
  down: Http2Stream,
  headers: HeaderList,
  open: OpenUpstream,
): Promise<Http2Stream> {
  const noBody = down.remoteEnded && down.bufferedBytes === 0;
  const up = await open(headers, noBody, () => down.isClosed);
  if (!noBody) return up;
  try {
    await up.response;
    return up;
  } catch (e) {
    if (!(e instanceof Http2Error) || e.code !== REFUSED_STREAM || down.isClosed) return up;
    return open(headers, true, () => down.isClosed);
  }
}

/**
 * Copies the body and trailers of `from`'s received side to `to`'s sending side. `from` failing (a
 * reset) resets `to`. `to` failing: for the response (`stopSource`) the upstream is reset, the client
 * being gone; for the request the rest is dropped, the response path answering the client.
 */
async function pump(from: Http2Stream, to: Http2Stream, stopSource: boolean): Promise<void> {
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
        to.end(await from.trailers);
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
function safely(fn: () => void): void {
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
