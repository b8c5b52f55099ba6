import assert from "node:assert/strict";
import { Debouncer } from "./debounce.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("a burst becomes one flush with every reason counted, after the quiet period", async () => {
  const flushes: Map<string, number>[] = [];
  const d = new Debouncer((r) => flushes.push(r), { afterMs: 60, maxMs: 5000 });
  d.trigger("config");
  await sleep(20);
  d.trigger("config");
  d.trigger("proxy");
  await sleep(30);
  assert.equal(flushes.length, 0, "still inside the quiet period");
  await sleep(120);
  assert.deepEqual(flushes, [new Map([["config", 2], ["proxy", 1]])]);
  d.stop();
});

Deno.test("a steady trickle is flushed by the maximum wait", async () => {
  const flushes: number[] = [];
  const d = new Debouncer((r) => flushes.push([...r.values()][0]), { afterMs: 50, maxMs: 200 });
  // Triggers until the first flush (bounded): without the maximum wait, a trickle every 20 ms never
  // leaves the 50 ms quiet period, so nothing would flush. A bound, not a fixed window, so that a
  // loaded machine's late timers cannot end the loop before the flush is due.
  const start = Date.now();
  while (flushes.length === 0 && Date.now() - start < 3000) {
    d.trigger("config");
    await sleep(20);
  }
  d.stop();
  assert.ok(flushes.length >= 1, "the max wait forced a push although events never paused");
});

Deno.test("flushNow sends what is pending; stop drops it", async () => {
  const flushes: number[] = [];
  const d = new Debouncer((r) => flushes.push(r.size), { afterMs: 1000, maxMs: 5000 });
  d.trigger("a");
  d.flushNow();
  assert.deepEqual(flushes, [1]);
  d.flushNow();
  d.trigger("b");
  d.stop();
  await sleep(20);
  assert.deepEqual(flushes, [1]);
});
