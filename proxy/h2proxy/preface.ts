/**
 * Telling an HTTP/2 connection with prior knowledge from HTTP/1.1 by its first bytes: the client
 * connection preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 section 3.4). Only as many bytes
 * as needed are awaited: a first byte other than `P` decides at once, so HTTP/1.1 requests are not
 * delayed; the bytes read are put back on the socket for whichever codec serves it, which resumes it
 * with `resumeReading` (../tcp/relay.ts).
 *
 * @module
 */
import type net from "node:net";
import { pauseReading, resumeReading } from "../tcp/relay.ts";
import { concat } from "../tls/client_hello.ts";

/** The client connection preface. */
export const PREFACE: Uint8Array = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * 1 when `bytes` start with the whole preface, 0 when they are a proper prefix of it (read more),
 * -1 when they differ from it.
 */
export function prefaceState(bytes: Uint8Array): -1 | 0 | 1 {
  const n = Math.min(bytes.length, PREFACE.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== PREFACE[i]) return -1;
  return n === PREFACE.length ? 1 : 0;
}

/**
 * Reads the socket's first bytes until they show whether the connection starts with the HTTP/2
 * preface, puts them back (`unshift`, the socket paused) and calls `decided` once: true for HTTP/2,
 * false for anything else, also when the peer ends or `timeoutMs` passes while the bytes could still
 * be a preface (the HTTP/1.1 codec then answers or times out what it got).
 */
export function sniffPreface(socket: net.Socket, timeoutMs: number, decided: (http2: boolean) => void): void {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let done = false;
  const finish = (http2: boolean) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("end", onEnd);
    // Not pause(): a node:tls socket paused so in Deno 2.9 never reports the peer's FIN (../tcp/relay.ts).
    pauseReading(socket);
    if (size > 0) socket.unshift(concat(chunks, size));
    decided(http2);
  };
  const onData = (chunk: Uint8Array) => {
    chunks.push(chunk);
    size += chunk.length;
    const state = prefaceState(chunks.length === 1 ? chunk : concat(chunks, size));
    if (state !== 0) finish(state === 1);
  };
  const onEnd = () => finish(false);
  const timer = setTimeout(() => finish(false), timeoutMs);
  Deno.unrefTimer(timer);
  socket.on("data", onData);
  socket.once("end", onEnd);
  resumeReading(socket);
}
