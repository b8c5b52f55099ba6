/**
 * HTTP/2 frames (RFC 9113 section 4 and 6): the type, flag, setting and error-code numbers, and the
 * encoders of the frames this codec sends. Each encoder returns one new buffer holding the 9-octet
 * frame header and the payload; DATA is sent as a header buffer plus the caller's payload (no copy).
 *
 * @module
 */

/** Frame types (RFC 9113 section 6). */
export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;

/** Flags. */
export const FLAG_END_STREAM = 0x1;
export const FLAG_ACK = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;

/** Setting identifiers (RFC 9113 section 6.5.2). */
export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** Error codes (RFC 9113 section 7). */
export const NO_ERROR = 0x0;
export const PROTOCOL_ERROR = 0x1;
export const INTERNAL_ERROR = 0x2;
export const FLOW_CONTROL_ERROR = 0x3;
export const SETTINGS_TIMEOUT = 0x4;
export const STREAM_CLOSED = 0x5;
export const FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7;
export const CANCEL = 0x8;
export const COMPRESSION_ERROR = 0x9;
export const CONNECT_ERROR = 0xa;
export const ENHANCE_YOUR_CALM = 0xb;
export const INADEQUATE_SECURITY = 0xc;
export const HTTP_1_1_REQUIRED = 0xd;

const ERROR_NAMES = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/** The RFC's name of an error code ("0x1f" style for unknown codes). */
export function errorName(code: number): string {
  return ERROR_NAMES[code] ?? `0x${code.toString(16)}`;
}

/** The client connection preface (RFC 9113 section 3.4). */
export const PREFACE: Uint8Array = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Octets in a frame header. */
export const FRAME_HEADER = 9;
/** Largest window (RFC 9113 section 6.9.1). */
export const MAX_WINDOW = 2 ** 31 - 1;
/** The window every stream and the connection start with before SETTINGS (65,535). */
export const DEFAULT_WINDOW = 65535;
/** The smallest SETTINGS_MAX_FRAME_SIZE and the default (16,384). */
export const MIN_MAX_FRAME_SIZE = 16384;
/** The largest SETTINGS_MAX_FRAME_SIZE (2^24 - 1). */
export const MAX_MAX_FRAME_SIZE = 2 ** 24 - 1;

/** Writes a frame header at `out[pos]`. */
export function putFrameHeader(
  out: Uint8Array,
  pos: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[pos] = length >>> 16;
  out[pos + 1] = (length >>> 8) & 0xff;
  out[pos + 2] = length & 0xff;
  out[pos + 3] = type;
  out[pos + 4] = flags;
  put32(out, pos + 5, streamId & MAX_WINDOW);
}

function put32(out: Uint8Array, pos: number, v: number): void {
  out[pos] = v >>> 24;
  out[pos + 1] = (v >>> 16) & 0xff;
  out[pos + 2] = (v >>> 8) & 0xff;
  out[pos + 3] = v & 0xff;
}

/** A frame with the given payload (copied after the header). */
export function frame(type: number, flags: number, streamId: number, payload?: Uint8Array): Uint8Array {
  const len = payload ? payload.length : 0;
  const out = new Uint8Array(FRAME_HEADER + len);
  putFrameHeader(out, 0, len, type, flags, streamId);
  if (payload) out.set(payload, FRAME_HEADER);
  return out;
}

/** A SETTINGS frame with `[id, value]` entries (or an ACK when `entries` is null). */
export function settingsFrame(entries: ReadonlyArray<readonly [number, number]> | null): Uint8Array {
  if (entries === null) return frame(SETTINGS, FLAG_ACK, 0);
  const out = new Uint8Array(FRAME_HEADER + 6 * entries.length);
  putFrameHeader(out, 0, 6 * entries.length, SETTINGS, 0, 0);
  entries.forEach(([id, value], i) => {
    const p = FRAME_HEADER + 6 * i;
    out[p] = id >>> 8;
    out[p + 1] = id & 0xff;
    put32(out, p + 2, value);
  });
  return out;
}

/** RST_STREAM with an error code. */
export function rstStreamFrame(streamId: number, code: number): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER + 4);
  putFrameHeader(out, 0, 4, RST_STREAM, 0, streamId);
  put32(out, FRAME_HEADER, code);
  return out;
}

/** WINDOW_UPDATE (increment 1 to 2^31 - 1). */
export function windowUpdateFrame(streamId: number, increment: number): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER + 4);
  putFrameHeader(out, 0, 4, WINDOW_UPDATE, 0, streamId);
  put32(out, FRAME_HEADER, increment);
  return out;
}

/** PING (8 octets of opaque data), or its ACK echoing them. */
export function pingFrame(data: Uint8Array, ack: boolean): Uint8Array {
  return frame(PING, ack ? FLAG_ACK : 0, 0, data);
}

/** GOAWAY with the last stream id, an error code and optional debug data. */
export function goawayFrame(lastStreamId: number, code: number, debug = ""): Uint8Array {
  const text = new TextEncoder().encode(debug.slice(0, 256));
  const out = new Uint8Array(FRAME_HEADER + 8 + text.length);
  putFrameHeader(out, 0, 8 + text.length, GOAWAY, 0, 0);
  put32(out, FRAME_HEADER, lastStreamId & MAX_WINDOW);
  put32(out, FRAME_HEADER + 4, code);
  out.set(text, FRAME_HEADER + 8);
  return out;
}

/**
 * HEADERS and as many CONTINUATION frames as `block` needs at `maxFrameSize`, in one buffer.
 * END_STREAM goes on the HEADERS frame, END_HEADERS on the last one.
 */
export function headersFrames(
  streamId: number,
  block: Uint8Array,
  endStream: boolean,
  maxFrameSize: number,
): Uint8Array {
  const frames = Math.max(1, Math.ceil(block.length / maxFrameSize));
  const out = new Uint8Array(block.length + FRAME_HEADER * frames);
  let pos = 0;
  for (let i = 0; i < frames; i++) {
    const start = i * maxFrameSize;
    const chunk = block.subarray(start, Math.min(block.length, start + maxFrameSize));
    const type = i === 0 ? HEADERS : CONTINUATION;
    const flags = (i === 0 && endStream ? FLAG_END_STREAM : 0) | (i === frames - 1 ? FLAG_END_HEADERS : 0);
    putFrameHeader(out, pos, chunk.length, type, flags, streamId);
    out.set(chunk, pos + FRAME_HEADER);
    pos += FRAME_HEADER + chunk.length;
  }
  return out;
}

/** Reads a 31-bit stream id or window increment (the reserved bit ignored). */
export function read31(src: Uint8Array, pos: number): number {
  return ((src[pos] & 0x7f) << 24 | src[pos + 1] << 16 | src[pos + 2] << 8 | src[pos + 3]) >>> 0;
}

/** Reads an unsigned 32-bit value. */
export function read32(src: Uint8Array, pos: number): number {
  return (src[pos] << 24 | src[pos + 1] << 16 | src[pos + 2] << 8 | src[pos + 3]) >>> 0;
}
