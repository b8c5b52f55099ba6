/** The summary's parsers of saved bench output (pure). */
import assert from "node:assert/strict";
import { jsonLines, lastJsonLine, parseAuthzBench, parseAuthzCpu } from "./inputs.ts";

const bench = (name: string, avg?: number) => ({
  name,
  results: [avg === undefined ? { failed: "x" } : { ok: { n: 10, avg } }],
});

Deno.test("summary inputs: the slowest indexed 1,000-policy case of deno bench --json", () => {
  const report = JSON.stringify({
    version: 1,
    benches: [
      bench("worst case, 1000 policies, allowed, indexed", 440),
      bench("Istio mix, 1000 policies, allowed (JWT), indexed", 2775),
      bench("Istio mix, 1000 policies, allowed (JWT), linear", 90_000),
      bench("worst case, 100 policies, allowed, indexed", 9_999),
      bench("worst case, 1000 policies, denied by DENY, indexed"),
    ],
  });
  assert.deepEqual(parseAuthzBench(report), {
    worstNs: 2775,
    worstCase: "Istio mix, 1000 policies, allowed (JWT), indexed",
  });
  assert.equal(parseAuthzBench(JSON.stringify({ benches: [bench("compile 1,000 policies", 5)] })), null);
});

Deno.test("summary inputs: the JSON line among progress lines", () => {
  const out = 'bench: mesh: wrk\n{"bench":"proxy_pair","concurrency":1}\n';
  assert.deepEqual(lastJsonLine(out, "proxy_pair"), { bench: "proxy_pair", concurrency: 1 });
  assert.throws(() => lastJsonLine("bench: failed\n{not json\n", "proxy_pair"), /proxy_pair: no JSON line/);
  assert.deepEqual(jsonLines('{"clients":1}\nnoise\n{"clients":2}\n{broken\n'), [{ clients: 1 }, {
    clients: 2,
  }]);
});

Deno.test("summary inputs: the slowest 1,000-policy request of authz_cpu.ts, by its median CPU time", () => {
  const out = [
    "Istio mix, 1000 policies, allowed (JWT): 301 ns (median 330 ns) CPU per request",
    "worst case, 1000 policies, denied by DENY: 280 ns (median 412 ns) CPU per request",
    "worst case, 100 policies, allowed: 9999 ns (median 9999 ns) CPU per request",
    "Istio mix, compile 1000 policies: 5.1 ms (median 5.3 ms) CPU",
  ].join("\n");
  assert.deepEqual(parseAuthzCpu(out), {
    worstNs: 412,
    worstCase: "worst case, 1000 policies, denied by DENY (CPU, median of 5 rounds)",
  });
  assert.equal(parseAuthzCpu("Istio mix, compile 1000 policies: 5.1 ms (median 5.3 ms) CPU"), null);
});
