/**
 * CPU time of one authorization against 1,000 policies, per mix and request of authz_mixes.ts, and of
 * compiling them: process CPU time (user + system, `process.cpuUsage`) over a fixed number of
 * evaluations, the best and the median of five rounds. Unlike the wall-clock averages of
 * authz_bench.ts, this figure holds on a machine shared with other work (time spent waiting for a core
 * is not counted). The goal of issue 17 is at most 1 µs per request.
 *
 * Run: `./dev deno run -A tests/bench/authz_cpu.ts`; compare two checkouts by running it in each, in
 * turns.
 */
import process from "node:process";
import { compileAuthorization } from "../../shared/mod.ts";
import { MIXES } from "./authz_mixes.ts";

const POLICIES = 1000;
const EVALUATIONS = 200_000;
const ROUNDS = 5;

/** CPU nanoseconds per call of `f` over `count` calls: [best, median] of {@link ROUNDS} rounds. */
function cpuPerCall(count: number, f: () => void): [number, number] {
  const runs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) f();
    const used = process.cpuUsage(start);
    runs.push((used.user + used.system) * 1000 / count);
  }
  runs.sort((a, b) => a - b);
  return [runs[0], runs[Math.floor(ROUNDS / 2)]];
}

const ns = ([best, median]: [number, number]): string =>
  `${best.toFixed(0)} ns (median ${median.toFixed(0)} ns)`;
const ms = ([best, median]: [number, number]): string =>
  `${(best / 1e6).toFixed(1)} ms (median ${(median / 1e6).toFixed(1)} ms)`;

for (const [mix, make, requests] of MIXES) {
  const policies = make(POLICIES);
  const compiled = compileAuthorization(policies);
  for (const [label, request, allowed] of requests(POLICIES)) {
    if (compiled.evaluate(request).allowed !== allowed) throw new Error(`${mix}, ${label}: wrong decision`);
    const cost = cpuPerCall(EVALUATIONS, () => {
      // The proxy reads the reason of every denial (its log line).
      const r = compiled.evaluate(request);
      if (!r.allowed && r.reason.length === 0) throw new Error("no reason");
    });
    console.log(`${mix}, ${POLICIES} policies, ${label}: ${ns(cost)} CPU per request`);
  }
  console.log(
    `${mix}, compile ${POLICIES} policies: ${ms(cpuPerCall(10, () => compileAuthorization(policies)))} CPU`,
  );
}
