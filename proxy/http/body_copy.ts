/**
 * Copying bytes between a downstream and an upstream connection, chunk by chunk (never a whole body
 * in memory): a head in one write, exactly `length` bytes, until the source closes (re-chunked for
 * HTTP/1.1 clients), a chunked body as received or decoded, and the two-way tunnel of an upgrade.
 *
 * @module
 */
import { ascii } from "./chars.ts";
import { CHUNK_DATA, CHUNK_DONE, type ChunkedDecoder } from "./chunked.ts";
import { encodeResponseHead, type HeadBytes, outBuffer, type ResponseHeadOptions } from "./encode.ts";
import type { HttpHead } from "./http_head.ts";
import type { SocketIo } from "./socket_io.ts";

const CRLF = ascii("\r\n");
const LAST_CHUNK = ascii("0\r\n\r\n");
const FALSE = Promise.resolve(false);
/**
 * Body bytes up to this size are copied behind the response head and written with it: a copy of a
 * few KiB costs less than a corked two-buffer write through node's streams (measured in README.md).
 */
export const JOIN_LIMIT = 16 * 1024;

/**
 * Writes a head in one write. A head in two buffers (the received bytes and the additions) is joined
 * into one: a copy of at most the head limit costs less than a corked writev through node's streams.
 * `body` (at most JOIN_LIMIT bytes) is copied behind the head into the same write.
 */
export function writeHead(io: SocketIo, head: HeadBytes, body?: Uint8Array): void {
  const first = head.first;
  const second = head.second;
  if (second === null && body === undefined) {
    io.write(first);
    return;
  }
  const headSize = first.length + (second === null ? 0 : second.length);
  const out = outBuffer(headSize + (body === undefined ? 0 : body.length));
  out.set(first);
  if (second !== null) out.set(second, first.length);
  if (body !== undefined) out.set(body, headSize);
  io.write(out);
}

/**
 * Writes the head of a Content-Length response (`h.contentLength` > 0) and the body bytes that
 * arrived with it: in one buffer when they are at most JOIN_LIMIT, else two corked writes. Returns
 * null when the whole body was written, else the copy of the rest (false: `up` ended first).
 */
export function writeLengthResponse(
  up: SocketIo,
  down: SocketIo,
  h: HttpHead,
  opts: ResponseHeadOptions,
): Promise<boolean> | null {
  const length = h.contentLength;
  let c: Uint8Array | null | undefined;
  try {
    c = up.read();
  } catch {
    c = null;
  }
  if (c === undefined || c === null) {
    down.write(encodeResponseHead(h, opts).first);
    return c === null ? FALSE : copyLength(up, down, length);
  }
  if (c.length > length) {
    up.unread(c.subarray(length));
    c = c.subarray(0, length);
  }
  if (c.length <= JOIN_LIMIT) down.write(encodeResponseHead(h, opts, c).first);
  else {
    down.cork();
    down.write(encodeResponseHead(h, opts).first);
    down.write(c);
    down.uncork();
  }
  // Backpressure is left to the copy that follows, or to the next request's first wait.
  return c.length === length ? null : copyLength(up, down, length - c.length);
}

/** Copies exactly `length` bytes; false if the source ended first. */
export async function copyLength(src: SocketIo, dst: SocketIo, length: number): Promise<boolean> {
  let remaining = length;
  for (;;) {
    let c: Uint8Array | null | undefined;
    try {
      c = src.read();
    } catch {
      return false;
    }
    if (c === undefined) {
      await src.wait();
      continue;
    }
    if (c === null) return false;
    if (c.length > remaining) {
      src.unread(c.subarray(remaining));
      c = c.subarray(0, remaining);
    }
    remaining -= c.length;
    if (!dst.write(c)) await dst.drain();
    if (remaining === 0) return true;
  }
}

/** Copies until the source ends; re-chunked for HTTP/1.1 clients. Always complete (true). */
export async function copyUntilClose(src: SocketIo, dst: SocketIo, rechunk: boolean): Promise<boolean> {
  for (;;) {
    let c: Uint8Array | null | undefined;
    try {
      c = src.read();
    } catch {
      c = null;
    }
    if (c === undefined) {
      await src.wait();
      continue;
    }
    if (c === null) {
      if (rechunk) dst.write(LAST_CHUNK);
      return true;
    }
    let ok: boolean;
    if (rechunk) {
      dst.cork();
      dst.write(ascii(c.length.toString(16) + "\r\n"));
      dst.write(c);
      ok = dst.write(CRLF);
      dst.uncork();
    } else ok = dst.write(c);
    if (!ok) await dst.drain();
  }
}

/** Both directions of an upgraded connection, until both ends are closed. */
export async function tunnel(down: SocketIo, up: SocketIo): Promise<void> {
  down.peer = up;
  up.peer = down;
  await Promise.all([pipe(down, up), pipe(up, down)]);
  down.destroy();
  up.destroy();
}

async function pipe(src: SocketIo, dst: SocketIo): Promise<void> {
  try {
    for (;;) {
      const c = src.read();
      if (c === undefined) {
        await src.wait();
        continue;
      }
      if (c === null) {
        dst.end();
        return;
      }
      if (!dst.write(c)) await dst.drain();
    }
  } catch {
    src.destroy();
    dst.destroy();
  }
}

/**
 * Copies a chunked response from `up` to `down`: as received, or decoded (HTTP/1.0 client) with
 * `dec` made to emit data. False if cut short.
 */
export async function copyChunked(
  up: SocketIo,
  down: SocketIo,
  dec: ChunkedDecoder,
  decode: boolean,
): Promise<boolean> {
  dec.reset();
  for (;;) {
    let c: Uint8Array | null | undefined;
    try {
      c = up.read();
    } catch {
      return false;
    }
    if (c === undefined) {
      await up.wait();
      continue;
    }
    if (c === null) return false;
    if (!decode) {
      const stop = dec.step(c, 0, c.length);
      if (stop < c.length) up.unread(c.subarray(stop));
      if (!down.write(stop === c.length ? c : c.subarray(0, stop))) await down.drain();
      if (dec.result === CHUNK_DONE) return true;
      continue;
    }
    let i = 0;
    while (i < c.length) {
      const next = dec.step(c, i, c.length);
      if (dec.result === CHUNK_DATA && next > dec.dataStart) {
        if (!down.write(c.subarray(dec.dataStart, next))) await down.drain();
      }
      i = next;
      if (dec.result === CHUNK_DONE) {
        if (i < c.length) up.unread(c.subarray(i));
        return true;
      }
    }
  }
}
