/**
 * Helpers for the TCP tests (relay, inbound and outbound TCP): collecting what a socket reads until
 * it closes. Not used by the proxy itself.
 *
 * @module
 */
import type net from "node:net";
import { createHash } from "node:crypto";

/** What a socket read until it closed, and how it closed. */
export interface Received {
  bytes: Uint8Array;
  text: string;
  /** The peer's FIN arrived. */
  ended: boolean;
  /** The error code (ECONNRESET, ...) or message, if any. */
  error: string | null;
}

/**
 * Collects what `s` reads until it closes (never rejects). With `endOnEnd`, the socket's own FIN is
 * sent when the peer's arrives, so that a half-open socket closes.
 */
export function collect(s: net.Socket, endOnEnd = false): Promise<Received> {
  const chunks: Uint8Array[] = [];
  let ended = false;
  let error: string | null = null;
  s.on("data", (c: Uint8Array) => chunks.push(c));
  s.on("end", () => {
    ended = true;
    if (endOnEnd) s.end();
  });
  s.on("error", (e: Error & { code?: string }) => (error = e.code ?? e.message));
  return new Promise((resolve) =>
    s.on("close", () => {
      const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) {
        bytes.set(c, at);
        at += c.length;
      }
      resolve({ bytes, text: new TextDecoder().decode(bytes), ended, error });
    })
  );
}

/** The SHA-256 of `b`, hex. */
export function sha256Hex(b: Uint8Array): string {
  return createHash("sha256").update(b).digest("hex");
}
