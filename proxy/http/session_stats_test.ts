import assert from "node:assert/strict";
import { SESSION_COUNTERS, SessionStats } from "./session_stats.ts";

Deno.test("SessionStats: the listener's counters and the session counters, each once, at 0", () => {
  const s = new SessionStats(["downstream_cx_total", "downstream_rq_total"] as const);
  assert.deepEqual(Object.keys(s.counters).sort(), ["downstream_cx_total", ...SESSION_COUNTERS].sort());
  assert.ok(Object.values(s.counters).every((v) => v === 0));
});

Deno.test("SessionStats: each event counts where Envoy counts it", () => {
  const cases: [event: (s: SessionStats<never>) => void, counter: string][] = [
    [(s) => s.request(), "downstream_rq_total"],
    [(s) => s.response(101, false), "downstream_rq_1xx"],
    [(s) => s.response(204, false), "downstream_rq_2xx"],
    [(s) => s.response(302, true), "downstream_rq_3xx"],
    [(s) => s.response(403, true), "downstream_rq_4xx"],
    [(s) => s.response(503, false), "downstream_rq_5xx"],
    [(s) => s.upstreamError("connect_failure"), "upstream_cx_connect_fail"],
    [(s) => s.upstreamError("reset_before_response"), "upstream_rq_reset_before_response"],
    [(s) => s.upstreamError("reset_during_response"), "upstream_rq_reset_during_response"],
    [(s) => s.upstreamError("protocol_error"), "upstream_rq_protocol_error"],
    [(s) => s.retry(), "upstream_rq_retry"],
    [(s) => s.upgrade(), "downstream_cx_upgrades_total"],
  ];
  for (const [event, counter] of cases) {
    const s = new SessionStats<never>([]);
    event(s);
    const moved = Object.entries(s.counters).filter(([, v]) => v !== 0);
    assert.deepEqual(moved, [[counter, 1]], counter);
  }
});
