/**
 * The inbound side of a connection: each frame the reader yields is checked and applied as RFC 9113
 * section 6 says, with Envoy's flood limits (`limits.ts`). Errors are thrown as {@link Http2Error}:
 * `stream` 0 for a connection error (GOAWAY), a stream id for a stream error (RST_STREAM); the caller
 * (connection.ts) applies them.
 *
 * @module
 */
import {
  CONTINUATION,
  DATA,
  ENHANCE_YOUR_CALM,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
  FLAG_PRIORITY,
  FLOW_CONTROL_ERROR,
  FRAME_SIZE_ERROR,
  GOAWAY,
  HEADERS,
  MAX_WINDOW,
  NO_ERROR,
  PING,
  pingFrame,
  PRIORITY,
  PROTOCOL_ERROR,
  PUSH_PROMISE,
  read31,
  read32,
  RST_STREAM,
  SETTINGS,
  settingsFrame,
  STREAM_CLOSED,
  WINDOW_UPDATE,
} from "./frame.ts";
import { applySettings } from "./settings.ts";
import { receiveHeaderBlock } from "./receive_headers.ts";
import type { FrameReader } from "./frame_reader.ts";
import { latin1 } from "./hpack.ts";
import { Http2Error } from "./limits.ts";
import type { Http2Session } from "./session.ts";

const EMPTY = new Uint8Array(0);

/** A header block being assembled from HEADERS and CONTINUATION frames. */
export class BlockState {
  /** Stream of the block in progress, 0 when none. */
  streamId = 0;
  endStream = false;
  /** HEADERS had a PRIORITY part naming the stream itself. */
  selfDependent = false;
  /** The HEADERS fragment, and the CONTINUATION fragments after it (no array for a one-frame block). */
  first: Uint8Array = EMPTY;
  more: Uint8Array[] = [];
  bytes = 0;
  continuations = 0;
}

/** Applies the frame the reader holds. Throws Http2Error. */
export function receiveFrame(s: Http2Session, r: FrameReader, block: BlockState): void {
  const type = r.type;
  const id = r.streamId;
  const payload = r.payload;
  if (!s.settingsReceived && type !== SETTINGS) {
    throw new Http2Error(PROTOCOL_ERROR, "the first frame is not SETTINGS");
  }
  if (block.streamId !== 0 && (type !== CONTINUATION || id !== block.streamId)) {
    throw new Http2Error(
      PROTOCOL_ERROR,
      `frame type ${type} inside a header block of stream ${block.streamId}`,
    );
  }
  if (type === DATA || type === HEADERS || type === CONTINUATION) {
    // Padding does not count as payload (Envoy subtracts the padding length too).
    const padded = type !== CONTINUATION && (r.flags & FLAG_PADDED) !== 0 && payload.length > 0;
    countEmpty(s, padded ? payload.length - 1 - payload[0] : payload.length, r.flags, type);
  }
  switch (type) {
    case DATA:
      return receiveData(s, id, r.flags, payload);
    case HEADERS:
      return receiveHeaders(s, id, r.flags, payload, block);
    case CONTINUATION:
      return receiveContinuation(s, id, r.flags, payload, block);
    case PRIORITY:
      return receivePriority(s, id, payload);
    case RST_STREAM:
      return receiveRst(s, id, payload);
    case SETTINGS:
      return receiveSettings(s, id, r.flags, payload);
    case PUSH_PROMISE:
      throw new Http2Error(PROTOCOL_ERROR, "PUSH_PROMISE with SETTINGS_ENABLE_PUSH 0");
    case PING:
      return receivePing(s, id, r.flags, payload);
    case GOAWAY:
      return receiveGoaway(s, id, payload);
    case WINDOW_UPDATE:
      return receiveWindowUpdate(s, id, payload);
    default:
      return; // unknown frame types are ignored (RFC 9113 5.5)
  }
}

/** Envoy's `max_consecutive_inbound_frames_with_empty_payload`. */
function countEmpty(s: Http2Session, length: number, flags: number, type: number): void {
  if (length > 0 || (type !== CONTINUATION && (flags & FLAG_END_STREAM) !== 0)) {
    s.emptyFrames = 0;
    return;
  }
  if (++s.emptyFrames > s.limits.maxConsecutiveInboundFramesWithEmptyPayload) {
    throw new Http2Error(
      ENHANCE_YOUR_CALM,
      `more than ${s.limits.maxConsecutiveInboundFramesWithEmptyPayload} frames in a row with an empty payload`,
    );
  }
}

/** The payload without padding (RFC 9113 6.1), from `start` (after the pad length and priority). */
function unpad(payload: Uint8Array, flags: number, extra: number): Uint8Array {
  if ((flags & FLAG_PADDED) === 0) {
    if (payload.length < extra) throw new Http2Error(FRAME_SIZE_ERROR, "frame too short");
    return payload.subarray(extra);
  }
  if (payload.length < 1 + extra) throw new Http2Error(FRAME_SIZE_ERROR, "padded frame too short");
  const pad = payload[0];
  if (pad > payload.length - 1 - extra) {
    throw new Http2Error(PROTOCOL_ERROR, "padding longer than the payload");
  }
  return payload.subarray(1 + extra, payload.length - pad);
}

function receiveData(s: Http2Session, id: number, flags: number, payload: Uint8Array): void {
  if (id === 0) throw new Http2Error(PROTOCOL_ERROR, "DATA on stream 0");
  if (s.isIdle(id)) throw new Http2Error(PROTOCOL_ERROR, `DATA on idle stream ${id}`);
  const data = unpad(payload, flags, 0);
  const flowLen = payload.length;
  if (flowLen > s.connRecvWindow) throw new Http2Error(FLOW_CONTROL_ERROR, "DATA over the connection window");
  s.connRecvWindow -= flowLen;
  s.connectionConsumed(flowLen);
  const stream = s.streams.get(id);
  if (stream === undefined) {
    if (s.recentlyReset(id)) return;
    throw new Http2Error(STREAM_CLOSED, "DATA on a closed stream", id);
  }
  if (stream.remoteEnded) throw new Http2Error(STREAM_CLOSED, "DATA after END_STREAM", id);
  if (!stream.headReceived) throw new Http2Error(PROTOCOL_ERROR, "DATA before the response headers", id);
  if (flowLen > stream.recvWindow) {
    throw new Http2Error(FLOW_CONTROL_ERROR, "DATA over the stream window", id);
  }
  stream.recvWindow -= flowLen;
  if (flowLen > data.length) s.consumed(stream, flowLen - data.length);
  stream.recvBytes += data.length;
  const cl = stream.recvContentLength;
  if (cl >= 0 && stream.recvBytes > cl) {
    throw new Http2Error(PROTOCOL_ERROR, "DATA beyond content-length", id);
  }
  if (data.length > 0) stream.pushData(data);
  if ((flags & FLAG_END_STREAM) === 0) return;
  if (cl >= 0 && stream.recvBytes !== cl) {
    throw new Http2Error(PROTOCOL_ERROR, "DATA shorter than content-length", id);
  }
  stream.pushEnd(undefined);
  if (stream.isClosed) s.forget(stream);
}

function receiveHeaders(
  s: Http2Session,
  id: number,
  flags: number,
  payload: Uint8Array,
  block: BlockState,
): void {
  if (id === 0) throw new Http2Error(PROTOCOL_ERROR, "HEADERS on stream 0");
  const priority = (flags & FLAG_PRIORITY) !== 0;
  const fragment = unpad(payload, flags, priority ? 5 : 0);
  const pos = (flags & FLAG_PADDED) !== 0 ? 1 : 0;
  block.selfDependent = priority && read31(payload, pos) === id;
  block.streamId = id;
  block.endStream = (flags & FLAG_END_STREAM) !== 0;
  block.first = fragment;
  block.bytes = fragment.length;
  block.continuations = 0;
  if ((flags & FLAG_END_HEADERS) !== 0) finishBlock(s, block);
}

function receiveContinuation(
  s: Http2Session,
  id: number,
  flags: number,
  payload: Uint8Array,
  block: BlockState,
): void {
  if (block.streamId === 0 || id !== block.streamId) {
    throw new Http2Error(PROTOCOL_ERROR, `CONTINUATION on stream ${id} without a HEADERS before it`);
  }
  if (++block.continuations > s.limits.maxContinuationFrames) {
    throw new Http2Error(
      ENHANCE_YOUR_CALM,
      `more than ${s.limits.maxContinuationFrames} CONTINUATION frames`,
    );
  }
  block.more.push(payload);
  block.bytes += payload.length;
  if ((flags & FLAG_END_HEADERS) !== 0) finishBlock(s, block);
}

function finishBlock(s: Http2Session, block: BlockState): void {
  const { streamId, endStream, selfDependent, first } = block;
  block.first = EMPTY; // do not keep the socket's chunk alive on an idle connection
  let bytes = first;
  if (block.more.length > 0) {
    bytes = new Uint8Array(block.bytes);
    bytes.set(first);
    let o = first.length;
    for (const p of block.more) bytes.set(p, o), o += p.length;
    block.more = [];
  }
  block.streamId = 0;
  receiveHeaderBlock(s, streamId, endStream, selfDependent, bytes);
}

function receivePriority(s: Http2Session, id: number, payload: Uint8Array): void {
  if (id === 0) throw new Http2Error(PROTOCOL_ERROR, "PRIORITY on stream 0");
  if (payload.length !== 5) throw new Http2Error(FRAME_SIZE_ERROR, "PRIORITY of the wrong length", id);
  const limit = s.limits.maxInboundPriorityFramesPerStream * (1 + s.openedStreams);
  if (++s.priorityFrames > limit) {
    throw new Http2Error(ENHANCE_YOUR_CALM, `more than ${limit} PRIORITY frames`);
  }
  if (read31(payload, 0) === id) throw new Http2Error(PROTOCOL_ERROR, "stream depends on itself", id);
}

function receiveRst(s: Http2Session, id: number, payload: Uint8Array): void {
  if (id === 0) throw new Http2Error(PROTOCOL_ERROR, "RST_STREAM on stream 0");
  if (payload.length !== 4) throw new Http2Error(FRAME_SIZE_ERROR, "RST_STREAM of the wrong length");
  if (s.isIdle(id)) throw new Http2Error(PROTOCOL_ERROR, `RST_STREAM on idle stream ${id}`);
  const stream = s.streams.get(id);
  if (stream === undefined) return;
  const code = read32(payload, 0);
  const young = performance.now() - stream.openedAt < s.limits.prematureResetMinStreamLifetimeMs;
  // RFC 9113 8.1: RST_STREAM(NO_ERROR) after a complete response only asks us to stop sending (meshd
  // ends a gRPC call the client has not half-closed so); what was received must stay readable.
  if (code === NO_ERROR && stream.remoteEnded) stream.stopSending();
  else stream.fail(new Http2Error(code, `stream ${id} reset by the peer: code ${code}`, id), true);
  s.forget(stream);
  if (s.server && young) s.prematureResets++;
  checkPrematureResets(s);
}

/**
 * Envoy's rapid-reset defence (CVE-2023-44487, `ConnectionManagerImpl::maybeDrainDueToPrematureResets`):
 * before `total` streams have closed, at most total/2 premature resets; after, fewer than half of all.
 */
function checkPrematureResets(s: Http2Session): void {
  const total = s.limits.prematureResetTotalStreamCount;
  const premature = s.prematureResets * 2;
  if (s.closedStreams < total ? premature < total : premature < s.closedStreams) return;
  throw new Http2Error(
    ENHANCE_YOUR_CALM,
    `${s.prematureResets} premature stream resets of ${s.closedStreams} streams`,
  );
}

function receiveSettings(s: Http2Session, id: number, flags: number, payload: Uint8Array): void {
  if (id !== 0) throw new Http2Error(PROTOCOL_ERROR, "SETTINGS on a stream");
  if ((flags & FLAG_ACK) !== 0) {
    if (payload.length !== 0) throw new Http2Error(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
    return;
  }
  if (payload.length % 6 !== 0) throw new Http2Error(FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6");
  applySettings(s, payload);
  s.settingsReceived = true;
  s.writer.control(settingsFrame(null));
}

function receivePing(s: Http2Session, id: number, flags: number, payload: Uint8Array): void {
  if (id !== 0) throw new Http2Error(PROTOCOL_ERROR, "PING on a stream");
  if (payload.length !== 8) throw new Http2Error(FRAME_SIZE_ERROR, "PING of the wrong length");
  if ((flags & FLAG_ACK) !== 0) return;
  s.writer.control(pingFrame(payload, true));
}

function receiveGoaway(s: Http2Session, id: number, payload: Uint8Array): void {
  if (id !== 0) throw new Http2Error(PROTOCOL_ERROR, "GOAWAY on a stream");
  if (payload.length < 8) throw new Http2Error(FRAME_SIZE_ERROR, "GOAWAY too short");
  const debug = latin1(payload, 8, Math.min(payload.length - 8, 256));
  s.peerGoaway({ lastStreamId: read31(payload, 0), code: read32(payload, 4), debug });
}

function receiveWindowUpdate(s: Http2Session, id: number, payload: Uint8Array): void {
  if (payload.length !== 4) throw new Http2Error(FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong length");
  const limit = 5 +
    2 * (s.openedStreams + s.limits.maxInboundWindowUpdateFramesPerDataFrameSent * s.writer.dataFramesSent);
  if (++s.windowUpdateFrames > limit) {
    throw new Http2Error(ENHANCE_YOUR_CALM, `more than ${limit} WINDOW_UPDATE frames`);
  }
  const increment = read31(payload, 0);
  if (id === 0) {
    if (increment === 0) throw new Http2Error(PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection");
    if (s.connSendWindow + increment > MAX_WINDOW) {
      throw new Http2Error(FLOW_CONTROL_ERROR, "connection window over 2^31-1");
    }
    s.connSendWindow += increment;
    return s.wake();
  }
  if (s.isIdle(id)) throw new Http2Error(PROTOCOL_ERROR, `WINDOW_UPDATE on idle stream ${id}`);
  const stream = s.streams.get(id);
  if (stream === undefined) return;
  if (increment === 0) throw new Http2Error(PROTOCOL_ERROR, "WINDOW_UPDATE of 0", id);
  if (stream.sendWindow + increment > MAX_WINDOW) {
    throw new Http2Error(FLOW_CONTROL_ERROR, "stream window over 2^31-1", id);
  }
  stream.sendWindow += increment;
  s.wake(stream);
}
