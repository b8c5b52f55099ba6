/**
 * Helpers of the head parser's tests (head_test.ts, head_framing_test.ts): feeding a head whole and
 * in pieces, and checking that every way of feeding it gives the same result.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ascii } from "./chars.ts";
import { HeadParser } from "./head.ts";
import { HttpError, type HttpHead, REQUEST, type RESPONSE } from "./http_head.ts";

/** A head as plain data, for comparing parses. */
export interface HeadSummary {
  end: number;
  method: string;
  target: string;
  status: number;
  minor: number;
  /** Per field: name, value, kind (H_*), dropped (1) or kept (0). */
  headers: [string, string, number, number][];
  contentLength: number;
  contentLengthRewrite: boolean;
  chunked: boolean;
  hasTransferEncoding: boolean;
  keepAlive: boolean;
  upgrade: boolean;
  expect: number;
  xfccCount: number;
}

/** What {@link parseAll} found: the head, or the error's status and message. */
export type ParseOutcome =
  | { ok: true; summary: HeadSummary | null; head: HttpHead | null }
  | { ok: false; status: number; message: string };

/** Feeds `text` in pieces of `step` bytes (0: one piece); returns the head and where it ended. */
export function feed(
  kind: typeof REQUEST | typeof RESPONSE,
  text: string | Uint8Array,
  step = 0,
): { head: HttpHead | null; end: number } {
  const bytes = typeof text === "string" ? ascii(text) : text;
  const p = new HeadParser(kind);
  let consumed = 0;
  const pieces = step === 0 ? [bytes] : [];
  if (step > 0) { for (let i = 0; i < bytes.length; i += step) pieces.push(bytes.subarray(i, i + step)); }
  for (const piece of pieces) {
    const off = p.feed(piece);
    if (off >= 0) return { head: p.head, end: consumed + off };
    consumed += piece.length;
  }
  return { head: null, end: -1 };
}

/** Parses whole, byte by byte and in 7-byte pieces; all three must agree. */
export function parseAll(kind: typeof REQUEST | typeof RESPONSE, text: string | Uint8Array): ParseOutcome {
  const results = [0, 1, 7].map((step): ParseOutcome => {
    try {
      const r = feed(kind, text, step);
      return { ok: true as const, summary: r.head ? summarize(r.head, r.end) : null, head: r.head };
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      return { ok: false as const, status: e.status, message: e.message };
    }
  });
  // Errors must agree on the status; the message may differ (an early check can catch it first).
  const strip = (r: typeof results[number]) =>
    r.ok ? { ok: true, summary: r.summary } : { ok: false, status: r.status };
  assert.deepEqual(strip(results[1]), strip(results[0]), "byte-by-byte differs from whole");
  assert.deepEqual(strip(results[2]), strip(results[0]), "7-byte pieces differ from whole");
  return results[0];
}

/** The head as plain data, for comparing parses. */
export function summarize(h: HttpHead, end: number): HeadSummary {
  const headers: [string, string, number, number][] = [];
  for (let i = 0; i < h.count; i++) headers.push([h.name(i), h.value(i), h.kinds[i], h.drop[i]]);
  return {
    end,
    method: h.status === 0 ? h.methodText() : "",
    target: h.status === 0 ? h.targetText() : "",
    status: h.status,
    minor: h.minor,
    headers,
    contentLength: h.contentLength,
    contentLengthRewrite: h.contentLengthRewrite,
    chunked: h.chunked,
    hasTransferEncoding: h.hasTransferEncoding,
    keepAlive: h.keepAlive,
    upgrade: h.upgrade,
    expect: h.expect,
    xfccCount: h.xfccCount,
  };
}

/** Parses a request head that must be valid (whole and in pieces alike). */
export function request(text: string): HttpHead {
  const r = parseAll(REQUEST, text);
  if (!r.ok) throw new Error(`expected a valid request, got ${r.status} ${r.message}`);
  assert.ok(r.head, "head incomplete");
  return r.head!;
}
