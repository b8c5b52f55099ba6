import assert from "node:assert/strict";
import client from "prom-client";
import { TalliedCounter, TalliedHistogram } from "./tally.ts";

const BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 20, 30];

/** Values whose sums are exact in binary floating point, so that any order of addition agrees. */
function dyadic(seed: number, n: number): number[] {
  let x = seed;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push((x % 40_000) / 1024); // 0 to 39 s in 1/1024 steps: every bucket, and above the last
  }
  return out;
}

function pair(labelNames: string[]) {
  const plain = new client.Registry();
  const tallied = new client.Registry();
  const config = { name: "t_seconds", help: "h", labelNames, buckets: BUCKETS };
  return {
    plainRegistry: plain,
    talliedRegistry: tallied,
    plain: new client.Histogram({ ...config, registers: [plain] }),
    tallied: new TalliedHistogram({ ...config, registers: [tallied] }),
  };
}

Deno.test("a tallied histogram exports what prom-client's observe exports for the same values", async () => {
  const p = pair(["type"]);
  const values = dyadic(7, 5000);
  // Each tally taken when its series is first observed, as meshd's observers do.
  values.forEach((v, i) => {
    const type = i % 3 === 0 ? "b" : "a";
    p.plain.observe({ type }, v);
    p.tallied.tally({ type }).observe(v);
  });
  // Mixed with prom-client's own observe on the same series, and a series only observe touched.
  p.plain.observe({ type: "a" }, 2.5);
  p.tallied.observe({ type: "a" }, 2.5);
  p.plain.observe({ type: "c" }, 0.25);
  p.tallied.observe({ type: "c" }, 0.25);
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
  assert.deepEqual(await p.tallied.get(), await p.plain.get());
  // A scrape does not fold the tallies twice.
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
});

Deno.test("an unlabelled tallied histogram, and reset", async () => {
  const p = pair([]);
  const t = p.tallied.tally();
  for (const v of dyadic(3, 1000)) {
    p.plain.observe(v);
    t.observe(v);
  }
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
  p.plain.reset();
  p.tallied.reset();
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
  p.plain.observe(0.5);
  t.observe(0.5);
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
});

Deno.test("a labelled series reset and observed again only through its tally is exported as prom-client would", async () => {
  const p = pair(["type"]);
  const t = p.tallied.tally({ type: "x" });
  t.observe(1);
  p.plain.observe({ type: "x" }, 1);
  p.plain.reset();
  p.tallied.reset();
  t.observe(4);
  p.plain.observe({ type: "x" }, 4);
  assert.equal(await p.talliedRegistry.metrics(), await p.plainRegistry.metrics());
});

Deno.test("a tally refuses what prom-client refuses", () => {
  const p = pair(["type"]);
  assert.throws(() => p.tallied.tally({ nope: "x" } as never));
  assert.throws(() => p.tallied.tally({ type: "x" }).observe(Number.NaN), /not a valid number/);
  assert.throws(() => p.tallied.remove({ type: "x" }), /cannot be removed/);
  const counter = new TalliedCounter({ name: "t_total", help: "h", labelNames: ["type"], registers: [] });
  assert.throws(() => counter.remove({ type: "x" }), /cannot be removed/);
});

Deno.test("a tallied counter exports what prom-client's inc exports", async () => {
  const plainRegistry = new client.Registry();
  const talliedRegistry = new client.Registry();
  const config = { name: "t_total", help: "h", labelNames: ["type"] };
  const plain = new client.Counter({ ...config, registers: [plainRegistry] });
  const tallied = new TalliedCounter({ ...config, registers: [talliedRegistry] });
  const a = tallied.tally({ type: "a" });
  for (let i = 0; i < 1000; i++) {
    plain.inc({ type: "a" });
    a.observe(1);
  }
  plain.inc({ type: "b" }, 3);
  tallied.inc({ type: "b" }, 3);
  plain.inc({ type: "a" }, 2);
  tallied.inc({ type: "a" }, 2);
  assert.equal(await talliedRegistry.metrics(), await plainRegistry.metrics());
  assert.deepEqual(await tallied.get(), await plain.get());
  assert.equal(await talliedRegistry.metrics(), await plainRegistry.metrics(), "a scrape changes nothing");
  plain.reset();
  tallied.reset();
  a.observe(1);
  plain.inc({ type: "a" });
  assert.equal(await talliedRegistry.metrics(), await plainRegistry.metrics());
});
