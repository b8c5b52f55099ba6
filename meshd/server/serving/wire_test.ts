import assert from "node:assert/strict";
import { encodeFrame, type FromChild, readFrames } from "./wire.ts";

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      c.close();
    },
  });
}

async function collect(chunks: Uint8Array[]): Promise<{ header: FromChild; body: number[] }[]> {
  const out = [];
  for await (const f of readFrames<FromChild>(streamOf(chunks))) {
    out.push({ header: f.header, body: [...f.body] });
  }
  return out;
}

const frames: [FromChild, Uint8Array][] = [
  [{ t: "ready", ports: { plaintext: 1, tls: 2 } }, new Uint8Array()],
  [{ t: "data", id: 7 }, new Uint8Array([0, 1, 2, 255])],
  [{ t: "gone", id: 7 }, new Uint8Array()],
];
const bytes = new Uint8Array(frames.flatMap(([h, b]) => [...encodeFrame(h, b)]));
const want = frames.map(([header, body]) => ({ header, body: [...body] }));

Deno.test("frames: read back whole, in one chunk", async () => {
  assert.deepEqual(await collect([bytes]), want);
});

Deno.test("frames: read back when split at every byte", async () => {
  assert.deepEqual(await collect([...bytes].map((b) => new Uint8Array([b]))), want);
});

Deno.test("frames: a frame announcing more than 1 GiB breaks the pipe", async () => {
  const bad = new Uint8Array(8);
  new DataView(bad.buffer).setUint32(4, 2 ** 31);
  await assert.rejects(() => collect([bad]), /frame of \d+ bytes/);
});

Deno.test("frames: a truncated frame at the end yields nothing", async () => {
  assert.deepEqual(await collect([bytes.subarray(0, bytes.length - 1)]), want.slice(0, 2));
});
