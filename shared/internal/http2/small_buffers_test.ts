import assert from "node:assert/strict";
import { smallBuffer } from "./small_buffers.ts";

Deno.test("small buffers: zero-filled, the asked length, never overlapping, large ones on their own", () => {
  const seen: Uint8Array[] = [];
  for (let i = 0; i < 2000; i++) {
    const b = smallBuffer(1 + (i % 40));
    assert.equal(b.length, 1 + (i % 40));
    assert.ok(b.every((x) => x === 0), "zero-filled");
    b.fill(0xff);
    seen.push(b);
  }
  // Every earlier buffer still holds what was written into it: no later buffer shared its octets.
  for (const b of seen) assert.ok(b.every((x) => x === 0xff));
  const big = smallBuffer(100_000);
  assert.equal(big.length, 100_000);
  assert.equal(big.byteOffset, 0);
  assert.equal(big.buffer.byteLength, 100_000, "a large buffer has its own ArrayBuffer");
});
