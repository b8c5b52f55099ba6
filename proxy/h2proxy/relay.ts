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
import { CANCEL, INTERNAL_ERROR, NO_ERROR } from "../http2/frame.ts";
import type { Http2Stream } from "../http2/stream.ts";
import { grpcLocalReply, isGrpcContentType } from "../grpc/local_reply.ts";
import type { HeaderList } from "./request_head.ts";
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

/**
 * Answers a stream with the proxy's own response: trailers-only with `grpc-status` when the request
 * is gRPC (`requestContentType` `application/grpc*`), else `status` with a `text/plain` body.
 * Nothing is sent when the stream is already closed or answered.
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
      // The client may still be sending its request: it is not read, so stop it (RFC 9113 8.1).
      if (!down.remoteEnded) down.reset(NO_ERROR);
    } else {
      const body = new TextEncoder().encode(reply.body);
      down.respond([
        [":status", String(reply.status)],
        ["content-type", "text/plain"],
        ["content-length", String(body.length)],
        ...(reply.headers ?? []),
      ], { endStream: body.length === 0 });
      if (body.length === 0) {
        if (!down.remoteEnded) down.reset(NO_ERROR);
      } else {
        // END_STREAM rides on the body's last DATA frame: the reset goes only after it.
        const written = down.write(body);
        down.end();
        written.then(() => {
          if (!down.remoteEnded) down.reset(NO_ERROR);
        }, () => {});
      }
    }
    observer.response(reply.status, true);
  } catch {
    down.reset(INTERNAL_ERROR);
  }
}

/** Where a stream goes: opens the upstream stream with the headers to forward. */
export type OpenUpstream = (headers: HeaderList, endStream: boolean) => Promise<Http2Stream>;

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
    up = await open(headers, down.remoteEnded && down.bufferedBytes === 0);
  } catch (e) {
    ctx.observer.upstreamError("connect_failure");
    ctx.log.warn("upstream connection failed", { peer: ctx.peer, target: ctx.target, reason: String(e) });
    localReply(down, ctx.contentType, {
      status: 503,
      body: `upstream connect error or disconnect/reset before headers. reset reason: connection failure, ` +
        `transport failure reason: ${e instanceof Error ? e.message : String(e)}`,
    }, ctx.observer);
    return;
  }
  // A reset on either side ends the other; a normal end leaves the other to finish.
  down.closed.then((c) => {
    if (c.code !== NO_ERROR) up.reset(CANCEL);
  });
  up.closed.then((c) => {
    if (c.code !== NO_ERROR && down.headersSent) down.reset(c.code === CANCEL ? CANCEL : INTERNAL_ERROR);
  });
  if (!up.localEnded) pump(down, up);
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
    up.reset(CANCEL);
    return;
  }
  // Trailers-only (gRPC errors) or a response without a body: one HEADERS frame with END_STREAM.
  const headersOnly = up.remoteEnded && up.bufferedBytes === 0 && (await up.trailers) === undefined;
  try {
    down.respond(head, { endStream: headersOnly });
  } catch {
    up.reset(CANCEL);
    return;
  }
  ctx.observer.response(Number(head[0]?.[1]) || 0, false);
  if (!headersOnly) pump(up, down);
}

/** Copies the body and trailers of `from`'s received side to `to`'s sending side; a failure resets both. */
async function pump(from: Http2Stream, to: Http2Stream): Promise<void> {
  try {
    for (;;) {
      const chunk = await from.read();
      if (chunk === null) break;
      await to.write(chunk);
    }
    to.end(await from.trailers);
  } catch {
    from.reset(CANCEL);
    to.reset(CANCEL);
  }
}
