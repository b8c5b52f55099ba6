/**
 * A complete header block (HEADERS + CONTINUATION) received: decoded with HPACK first, always, so
 * that the decoder's table stays in step even for a stream that is refused; then a request opens a
 * stream (server), or a response or trailers go to their stream. Malformed lists are stream errors
 * PROTOCOL_ERROR (RFC 9113 8.1.1); a request over the header limits gets a 431 from the codec.
 *
 * @module
 */
import { COMPRESSION_ERROR, PROTOCOL_ERROR, REFUSED_STREAM, STREAM_CLOSED } from "./frame.ts";
import {
  type HeaderList,
  headerValue,
  KIND_REQUEST,
  KIND_RESPONSE,
  KIND_TRAILERS,
  validateHeaders,
} from "./headers.ts";
import { HpackError } from "./hpack.ts";
import { Http2Error } from "./limits.ts";
import type { Http2Session } from "./session.ts";
import type { Http2Stream } from "./stream.ts";

const TOO_LARGE: HeaderList = [[":status", "431"], ["content-length", "0"]];

/** Applies a decoded header block of stream `id`. Throws Http2Error. */
export function receiveHeaderBlock(
  s: Http2Session,
  id: number,
  endStream: boolean,
  selfDependent: boolean,
  block: Uint8Array,
): void {
  let headers: HeaderList;
  try {
    headers = s.decoder.decode(block);
  } catch (e) {
    if (e instanceof HpackError) throw new Http2Error(COMPRESSION_ERROR, e.message);
    throw e;
  }
  const oversized = s.decoder.oversized;
  const stream = s.streams.get(id);
  if (stream !== undefined) return trailersOrResponse(s, stream, headers, endStream, oversized);
  if (!s.server || (id & 1) === 0) {
    if (!s.isIdle(id) && s.recentlyReset(id)) return;
    throw new Http2Error(PROTOCOL_ERROR, `HEADERS on stream ${id}, which this side did not expect`);
  }
  if (id <= s.lastPeerStreamId) {
    if (s.recentlyReset(id)) return;
    throw new Http2Error(
      PROTOCOL_ERROR,
      `HEADERS on stream ${id}: ids must increase (last ${s.lastPeerStreamId})`,
    );
  }
  s.lastPeerStreamId = id;
  if (s.goawaySentId >= 0) return; // after our GOAWAY new streams are ignored (RFC 9113 6.8)
  if (selfDependent) throw new Http2Error(PROTOCOL_ERROR, "stream depends on itself", id);
  if (oversized) return refuseTooLarge(s, id, endStream);
  const check = validateHeaders(headers, KIND_REQUEST);
  if (check.error !== null) throw new Http2Error(PROTOCOL_ERROR, `malformed request: ${check.error}`, id);
  if (s.streams.size >= s.limits.maxConcurrentStreams) {
    s.openedStreams++;
    throw new Http2Error(REFUSED_STREAM, `over ${s.limits.maxConcurrentStreams} concurrent streams`, id);
  }
  const opened = s.newStream(id, headers);
  opened.headReceived = true;
  opened.recvContentLength = check.contentLength;
  if (endStream) {
    if (check.contentLength > 0) {
      throw new Http2Error(PROTOCOL_ERROR, "END_STREAM before content-length octets", id);
    }
    opened.pushEnd(undefined);
  }
  try {
    s.onStream(opened);
  } catch (e) {
    s.log(`http2: onStream threw: ${e}`);
    if (!opened.isClosed) opened.reset(PROTOCOL_ERROR);
  }
}

function refuseTooLarge(s: Http2Session, id: number, endStream: boolean): void {
  s.log(
    `http2: stream ${id}: request header list over ${s.limits.maxHeaderListBytes} octets or ${s.limits.maxHeaders} fields: 431`,
  );
  const stream = s.newStream(id, []);
  stream.headReceived = true;
  stream.respond(TOO_LARGE, { endStream: true });
  if (endStream) stream.pushEnd(undefined);
  if (!stream.isClosed) stream.reset(0);
  s.forget(stream);
}

function trailersOrResponse(
  s: Http2Session,
  stream: Http2Stream,
  headers: HeaderList,
  endStream: boolean,
  oversized: boolean,
): void {
  const id = stream.id;
  if (stream.remoteEnded) throw new Http2Error(STREAM_CLOSED, "HEADERS after END_STREAM", id);
  if (oversized) throw new Http2Error(PROTOCOL_ERROR, "header list over the limits", id);
  if (!stream.headReceived) { // client: a response head
    const check = validateHeaders(headers, KIND_RESPONSE);
    if (check.error !== null) throw new Http2Error(PROTOCOL_ERROR, `malformed response: ${check.error}`, id);
    if (check.status < 200) {
      if (endStream) throw new Http2Error(PROTOCOL_ERROR, "END_STREAM on an informational response", id);
      return;
    }
    const bodyless = headerValue(stream.headers, ":method") === "HEAD" || check.status === 204 ||
      check.status === 304;
    stream.recvContentLength = bodyless ? -1 : check.contentLength;
    stream.pushResponse(headers);
    if (!endStream) return;
    if (stream.recvContentLength > 0) {
      throw new Http2Error(PROTOCOL_ERROR, "END_STREAM before content-length octets", id);
    }
    stream.pushEnd(undefined);
  } else {
    if (!endStream) throw new Http2Error(PROTOCOL_ERROR, "trailers without END_STREAM", id);
    const check = validateHeaders(headers, KIND_TRAILERS);
    if (check.error !== null) throw new Http2Error(PROTOCOL_ERROR, `malformed trailers: ${check.error}`, id);
    const cl = stream.recvContentLength;
    if (cl >= 0 && stream.recvBytes !== cl) {
      throw new Http2Error(PROTOCOL_ERROR, "DATA shorter than content-length", id);
    }
    stream.pushEnd(headers);
  }
  if (stream.isClosed) s.forget(stream);
}
