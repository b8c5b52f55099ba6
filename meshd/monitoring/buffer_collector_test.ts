import assert from "node:assert/strict";
import v8 from "node:v8";
import { within } from "../../shared/internal/testing/deadline.ts";
import { exposedGc, startBufferCollector } from "./buffer_collector.ts";

const MiB = 1024 * 1024;
const external = () => v8.getHeapStatistics().external_memory;

/** Leaves `bytes` of dropped buffers for the collector, as written responses do. */
function garbage(bytes: number): void {
  let held: Uint8Array[] = [];
  for (let n = 0; n < bytes; n += 64 * 1024) held.push(new Uint8Array(64 * 1024).fill(1));
  held = [];
}

Deno.test("exposedGc: the runtime meshd runs on gives a collection that frees dropped buffers", () => {
  const gc = exposedGc();
  assert.ok(gc, "node:v8 --expose-gc and node:vm gave no gc function");
  gc();
  const before = external();
  garbage(64 * MiB);
  assert.ok(external() >= before + 60 * MiB, "dropped buffers were freed before any collection");
  gc();
  assert.ok(external() < before + 8 * MiB, `after gc ${external()} bytes, before ${before}`);
});

Deno.test("startBufferCollector: above the threshold it collects, and external memory falls below it", async () => {
  exposedGc()!();
  const threshold = external() + 32 * MiB;
  const collector = startBufferCollector({ thresholdBytes: threshold, checkMs: 20 })!;
  try {
    assert.ok(collector.trims, "the tests run with --allow-all: malloc_trim must be reachable");
    garbage(96 * MiB);
    await within(
      (async () => {
        while (collector.collections === 0 || external() > threshold) {
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      10_000,
      "a collection bringing external memory under the threshold",
    );
  } finally {
    collector.stop();
  }
});

Deno.test("startBufferCollector: below the threshold it never collects", async () => {
  const collector = startBufferCollector({ thresholdBytes: external() + 512 * MiB, checkMs: 10 })!;
  try {
    garbage(16 * MiB);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(collector.collections, 0);
  } finally {
    collector.stop();
  }
});

Deno.test("startBufferCollector: while busy the threshold is BUSY_FACTOR times higher", async () => {
  exposedGc()!();
  const collector = startBufferCollector({
    thresholdBytes: external() + 32 * MiB,
    checkMs: 10,
    busy: () => true,
  })!;
  try {
    garbage(64 * MiB);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(collector.collections, 0, "collected above the idle threshold while busy");
  } finally {
    collector.stop();
  }
});
