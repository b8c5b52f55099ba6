import assert from "node:assert/strict";
import { TokenBucket } from "./api_client.ts";

Deno.test("token bucket: burst requests at once, then one every 1/qps s, in order", async () => {
  const bucket = new TokenBucket(20, 3);
  const start = performance.now();
  const done: { i: number; at: number }[] = [];
  await Promise.all(
    Array.from(
      { length: 6 },
      (_, i) => bucket.take().then(() => done.push({ i, at: performance.now() - start })),
    ),
  );
  assert.deepEqual(done.map((d) => d.i), [0, 1, 2, 3, 4, 5]);
  for (const d of done.slice(0, 3)) assert.ok(d.at < 25, `burst request ${d.i} waited ${d.at} ms`);
  // Three more at 20 a second: the last no sooner than 150 ms (timers may fire late, never early).
  assert.ok(done[5].at >= 145, `the sixth request came after ${done[5].at} ms`);
});

Deno.test("token bucket: an aborted wait rejects with the signal's reason and frees its turn", async () => {
  const bucket = new TokenBucket(1, 1);
  await bucket.take();
  const controller = new AbortController();
  const waiting = bucket.take(controller.signal);
  controller.abort(new Error("stopped"));
  await assert.rejects(waiting, /stopped/);
});
