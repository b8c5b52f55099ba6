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

Deno.test("while the last push fans out, the flush waits for it, up to the maximum wait", async () => {
  let busy = true;
  const flushes: number[] = [];
  const d = new Debouncer((r) => flushes.push(r.size), { afterMs: 20, maxMs: 5000, busy: () => busy });
  d.trigger("proxy");
  await sleep(150);
  assert.deepEqual(flushes, [], "quiet, but the last push is still fanning out");
  busy = false;
  await sleep(150);
  assert.deepEqual(flushes, [1]);

  busy = true;
  const late: number[] = [];
  const bounded = new Debouncer((r) => late.push(r.size), { afterMs: 20, maxMs: 120, busy: () => busy });
  bounded.trigger("config");
  const start = Date.now();
  while (late.length === 0 && Date.now() - start < 3000) await sleep(10);
  assert.deepEqual(late, [1], "the maximum wait flushes even while busy");
  d.stop();
  bounded.stop();
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
