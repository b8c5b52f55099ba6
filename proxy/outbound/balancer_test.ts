import assert from "node:assert/strict";
import type { EndpointInfo } from "../runtime/snapshot.ts";
import { RoundRobin, WeightedRoundRobin } from "./balancer.ts";

function ep(address: string, ports: Record<string, number>): EndpointInfo {
  return { workload: address, address, ports, proxied: false, identity: "", labels: {} };
}

Deno.test("RoundRobin: cycles per key, independent keys", () => {
  const rr = new RoundRobin();
  const items = ["a", "b", "c"];
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(() => rr.pick("k", items)), ["a", "b", "c", "a", "b", "c", "a"]);
  assert.equal(rr.pick("other", items), "a");
  assert.equal(rr.pick("k", []), undefined);
});

Deno.test("RoundRobin.pickEndpoint: only endpoints with the service port, port mapped", () => {
  const rr = new RoundRobin();
  const eps = [
    ep("10.0.0.1", { "8000": 80 }),
    ep("10.0.0.2", { "9000": 90 }),
    ep("10.0.0.3", { "8000": 8080 }),
  ];
  const picks = [1, 2, 3, 4].map(() => rr.pickEndpoint("foo/a", eps, 8000)!);
  assert.deepEqual(picks.map((c) => `${c.endpoint.address}:${c.port}`), [
    "10.0.0.1:80",
    "10.0.0.3:8080",
    "10.0.0.1:80",
    "10.0.0.3:8080",
  ]);
  assert.equal(rr.pickEndpoint("foo/a", eps, 7000), undefined);
  assert.equal(rr.pickEndpoint("foo/a", [ep("10.0.0.4", { "8000": 0 })], 8000), undefined);
  assert.equal(rr.pickEndpoint("foo/a", [], 8000), undefined);
});

Deno.test("WeightedRoundRobin: weights honoured and interleaved; all-zero weights share equally", () => {
  const cases: [number[], number, string][] = [
    [[80, 20], 10, "aabaaaabaa"],
    [[50, 50], 4, "abab"],
    [[0, 0], 4, "abab"],
    [[100], 3, "aaa"],
    [[1, 0], 3, "aaa"],
  ];
  for (const [weights, n, want] of cases) {
    const wrr = new WeightedRoundRobin();
    const items = weights.map((weight, i) => ({ weight, name: "ab"[i] }));
    let got = "";
    for (let i = 0; i < n; i++) got += wrr.pick("route", items).name;
    assert.equal(got, want, JSON.stringify(weights));
  }
});
