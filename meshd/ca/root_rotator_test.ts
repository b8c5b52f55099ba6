import assert from "node:assert/strict";
import {
  RootCertRotator,
  rootRotationWaitMs,
  rotatorStartDelayMs,
  shouldRotateRoot,
} from "./root_rotator.ts";

const MIN = 60_000;
const T0 = Date.parse("2030-01-01T00:00:00Z");
/** A root valid for 100 minutes from T0. */
const ROOT = { notBefore: new Date(T0), notAfter: new Date(T0 + 100 * MIN) };
const at = (minutes: number) => new Date(T0 + minutes * MIN);

Deno.test("rootRotationWaitMs / shouldRotateRoot: Istio's GetWaitTime, rotate within the grace percentile", () => {
  const rows: { now: number; percentile: number; waitMin: number; rotate: boolean; why: string }[] = [
    { now: 0, percentile: 20, waitMin: 80, rotate: false, why: "fresh root: wait until 20 min remain" },
    { now: 50, percentile: 20, waitMin: 30, rotate: false, why: "half-way" },
    { now: 79.5, percentile: 20, waitMin: 0.5, rotate: false, why: "just before the grace period" },
    { now: 80, percentile: 20, waitMin: 0, rotate: true, why: "the grace period starts" },
    { now: 81, percentile: 20, waitMin: 0, rotate: true, why: "inside the grace period" },
    { now: 100, percentile: 20, waitMin: 0, rotate: true, why: "expiring now" },
    { now: 150, percentile: 20, waitMin: 0, rotate: true, why: "expired (Istio rotates on the error)" },
    { now: 10, percentile: 50, waitMin: 40, rotate: false, why: "percentile 50" },
    { now: 50, percentile: 50, waitMin: 0, rotate: true, why: "percentile 50 at half-way" },
    { now: 99, percentile: 0, waitMin: 1, rotate: false, why: "percentile 0: only when expired" },
    { now: 100, percentile: 0, waitMin: 0, rotate: true, why: "percentile 0, expired" },
    { now: 0, percentile: 100, waitMin: 0, rotate: true, why: "percentile 100: at every check" },
  ];
  for (const r of rows) {
    assert.equal(rootRotationWaitMs(ROOT, at(r.now), r.percentile), r.waitMin * MIN, r.why);
    assert.equal(shouldRotateRoot(ROOT, at(r.now), r.percentile), r.rotate, r.why);
  }
  // The grace period is a share of the whole lifetime, NotBefore included (a backdated NotBefore counts).
  const backdated = { notBefore: new Date(T0 - 2 * MIN), notAfter: new Date(T0 + 3 * MIN) };
  assert.equal(rootRotationWaitMs(backdated, at(0), 50), 0.5 * MIN);
  assert.equal(shouldRotateRoot(backdated, at(0.5), 50), true);
});

Deno.test("rotatorStartDelayMs: whole seconds in [0, interval) with jitter, 0 without", () => {
  const hour = 60 * MIN;
  assert.equal(rotatorStartDelayMs(hour, false, () => 0.7), 0);
  assert.equal(rotatorStartDelayMs(hour, true, () => 0), 0);
  assert.equal(rotatorStartDelayMs(hour, true, () => 0.5), 30 * MIN);
  assert.equal(rotatorStartDelayMs(hour, true, () => 0.9999999), hour - 1000, "below the interval");
  assert.equal(rotatorStartDelayMs(10_500, true, () => 0.99), 10_000, "truncated to seconds");
  assert.equal(rotatorStartDelayMs(0, true, () => 0.5), 0, "disabled");
  for (let i = 0; i < 200; i++) {
    const d = rotatorStartDelayMs(10_000, true);
    assert.ok(d >= 0 && d < 10_000 && d % 1000 === 0, `${d}`);
  }
});

Deno.test("RootCertRotator: checks every interval after the jitter, never two at once; disabled when not positive", async () => {
  let checks = 0;
  let concurrent = 0;
  let most = 0;
  const rotator = new RootCertRotator(
    { checkIntervalMs: 30, gracePeriodPercentile: 20, jitter: false, rootTtlMs: MIN },
    async () => {
      checks++;
      most = Math.max(most, ++concurrent);
      await new Promise((r) => setTimeout(r, 70)); // slower than the interval
      concurrent--;
      throw new Error("a failed check does not stop the rotator");
    },
  );
  assert.equal(rotator.start(), 0);
  await new Promise((r) => setTimeout(r, 400));
  await rotator.stop();
  const seen = checks;
  assert.ok(seen >= 3, `checked ${seen} times in 400 ms`);
  assert.equal(most, 1, "checks never overlap");
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(checks, seen, "no check after stop");

  const jittered = new RootCertRotator(
    { checkIntervalMs: 2000, gracePeriodPercentile: 20, jitter: true, rootTtlMs: MIN },
    () => Promise.resolve(),
  );
  assert.equal(jittered.start(() => 0.6), 1000);
  await jittered.stop();

  let disabledChecks = 0;
  const disabled = new RootCertRotator(
    { checkIntervalMs: 0, gracePeriodPercentile: 20, jitter: true, rootTtlMs: MIN },
    () => Promise.resolve(void disabledChecks++),
  );
  assert.equal(disabled.start(), undefined);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(disabledChecks, 0);
  await disabled.stop();
});
