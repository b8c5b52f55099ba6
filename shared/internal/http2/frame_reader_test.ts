import assert from "node:assert/strict";
import { DATA, frame, FRAME_HEADER, PING, SETTINGS } from "./frame.ts";
import { FrameReader } from "./frame_reader.ts";

function frames(): Uint8Array {
  const parts = [
    frame(SETTINGS, 0, 0),
    frame(DATA, 1, 3, new Uint8Array([1, 2, 3])),
    frame(PING, 0, 0, new Uint8Array(8).fill(7)),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, o), o += p.length;
  return out;
}

function readAll(r: FrameReader, chunks: Uint8Array[]): string[] {
  const seen: string[] = [];
  for (const c of chunks) {
    r.push(c);
    while (r.next()) seen.push(`${r.type}/${r.flags}/${r.streamId}/${Array.from(r.payload).join(",")}`);
  }
  return seen;
}

const WANT = ["4/0/0/", "0/1/3/1,2,3", "6/0/0/7,7,7,7,7,7,7,7"];

Deno.test("frame reader: whole frames in one chunk", () => {
  assert.deepEqual(readAll(new FrameReader(16384), [frames()]), WANT);
});

Deno.test("frame reader: split at every octet", () => {
  const all = frames();
  for (let cut = 1; cut < all.length; cut++) {
    assert.deepEqual(
      readAll(new FrameReader(16384), [all.subarray(0, cut), all.subarray(cut)]),
      WANT,
      `cut ${cut}`,
    );
  }
  const bytes = Array.from(all, (b) => new Uint8Array([b]));
  assert.deepEqual(readAll(new FrameReader(16384), bytes), WANT);
});

Deno.test("frame reader: a payload stays valid after later chunks", () => {
  const r = new FrameReader(16384);
  const all = frames();
  r.push(all.subarray(0, FRAME_HEADER + 10));
  assert.ok(r.next()); // SETTINGS
  assert.ok(!r.next()); // DATA incomplete
  r.push(all.subarray(FRAME_HEADER + 10));
  assert.ok(r.next());
  const data = r.payload;
  assert.ok(r.next());
  assert.deepEqual(Array.from(data), [1, 2, 3]);
});

Deno.test("frame reader: a frame over the limit is a FRAME_SIZE_ERROR, split header or not", () => {
  const big = frame(DATA, 0, 1, new Uint8Array(16385));
  assert.throws(() => readAll(new FrameReader(16384), [big]), /16385 octets over 16384/);
  assert.throws(() => readAll(new FrameReader(16384), [big.subarray(0, 4), big.subarray(4)]), /over 16384/);
});
