import assert from "node:assert/strict";
import { firstValue, metricsTable, promDuration, splitWorkload } from "./metrics.ts";

Deno.test("x metrics: durations in Prometheus's form", () => {
  const cases: [number, string][] = [[60_000, "1m"], [30_000, "30s"], [90_000, "90s"], [1500, "1500ms"]];
  for (const [ms, want] of cases) assert.equal(promDuration(ms), want);
});

Deno.test("x metrics: <workload>[.<namespace>]", () => {
  assert.deepEqual(splitWorkload("httpbin", "foo"), { name: "httpbin", namespace: "foo" });
  assert.deepEqual(splitWorkload("httpbin.bar", "foo"), { name: "httpbin", namespace: "bar" });
  assert.deepEqual(splitWorkload("a.b.c", "foo"), { name: "a.b", namespace: "c" });
});

Deno.test("x metrics: Prometheus answers: vector, empty, NaN, scalar, errors", () => {
  const vec = (result: unknown[]) => ({ status: "success", data: { resultType: "vector", result } });
  assert.equal(firstValue(vec([{ metric: {}, value: [1, "2.5"] }]), "q"), 2.5);
  assert.equal(firstValue(vec([]), "q"), 0);
  assert.equal(firstValue(vec([{ metric: {}, value: [1, "NaN"] }]), "q"), 0);
  assert.equal(firstValue({ status: "success", data: { resultType: "scalar", result: [1, "3"] } }, "q"), 3);
  assert.throws(
    () => firstValue({ status: "error", error: "parse error" }, "q"),
    /Prometheus: q: parse error/,
  );
  assert.throws(
    () => firstValue({ status: "success", data: { resultType: "matrix", result: [] } }, "q"),
    /matrix/,
  );
  assert.throws(() => firstValue(vec([{ metric: {} }]), "q"), /no value/);
});

Deno.test("x metrics: istioctl's table", () => {
  const out = metricsTable([{ workload: "httpbin", totalRps: 1, errorRps: 0, p50: 3.9, p90: 10, p99: 20 }]);
  const [head, row] = out.split("\n");
  assert.equal(
    head.trim().split(/\s{2,}/).join("|"),
    "WORKLOAD|TOTAL RPS|ERROR RPS|P50 LATENCY|P90 LATENCY|P99 LATENCY",
  );
  assert.equal(row.trim().split(/\s+/).join("|"), "httpbin|1.000|0.000|3ms|10ms|20ms");
});
