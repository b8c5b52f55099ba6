import assert from "node:assert/strict";
import { Backoff } from "./backoff.ts";

Deno.test("backoff: 100 ms doubling to 30 s without jitter, reset starts over", () => {
  const b = new Backoff({ jitter: 0 });
  const delays = Array.from({ length: 11 }, () => b.next());
  assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
  assert.equal(b.attempts, 11);
  b.reset();
  assert.equal(b.next(), 100);
});

Deno.test("backoff: jitter spreads each delay by ±50 % and never beyond the maximum", () => {
  const low = new Backoff({ random: () => 0 });
  const high = new Backoff({ random: () => 0.999999 });
  assert.deepEqual([low.next(), low.next(), low.next()], [50, 100, 200]);
  assert.deepEqual([high.next(), high.next(), high.next()], [150, 300, 600]);
  for (let i = 0; i < 20; i++) high.next();
  assert.equal(high.next(), 30_000, "capped at maxMs");
  const seen = new Set<number>();
  const real = new Backoff({ initialMs: 1000, maxMs: 1000 });
  for (let i = 0; i < 50; i++) {
    const d = real.next();
    assert.ok(d >= 500 && d <= 1000, `${d}`);
    seen.add(d);
  }
  assert.ok(seen.size > 5, "jittered delays differ");
});

Deno.test("backoff: bad options are refused", () => {
  assert.throws(() => new Backoff({ initialMs: 0 }), RangeError);
  assert.throws(() => new Backoff({ initialMs: 10, maxMs: 5 }), RangeError);
  assert.throws(() => new Backoff({ jitter: 2 }), RangeError);
  assert.throws(() => new Backoff({ multiplier: 0.5 }), RangeError);
});
