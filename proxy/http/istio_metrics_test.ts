import assert from "node:assert/strict";
import {
  formatIstioPrometheus,
  ISTIO_DURATION_BUCKETS_MS,
  ISTIO_LABELS,
  type IstioLabels,
  IstioMetrics,
  MAX_LABEL_SETS,
  mergeIstioSeries,
  MeteredObserver,
} from "./istio_metrics.ts";
import type { SessionObserver } from "./session_types.ts";

const LABELS = Object.fromEntries(ISTIO_LABELS.map((k) => [k, `${k}-v`])) as IstioLabels;

Deno.test("istio metrics: label sets are interned; counts, sums and buckets per response code", () => {
  const m = new IstioMetrics();
  const a = m.labels(LABELS);
  assert.equal(m.labels({ ...LABELS }), a);
  assert.notEqual(m.labels({ ...LABELS, source_principal: "other" }), a);
  a.record(200, 0.2);
  a.record(200, 7);
  a.record(403, 4_000_000);
  a.record(999, 1);
  const series = m.snapshot().filter((s) => s.labels[3] === "source_principal-v");
  const byCode = new Map(series.map((s) => [s.code, s]));
  assert.deepEqual([...byCode.keys()].sort(), [0, 200, 403]);
  const ok = byCode.get(200)!;
  assert.equal(ok.count, 2);
  assert.equal(ok.sumMs, 7.2);
  assert.equal(ok.buckets.length, ISTIO_DURATION_BUCKETS_MS.length + 1);
  assert.equal(ok.buckets[0], 1); // le 0.5
  assert.equal(ok.buckets[ISTIO_DURATION_BUCKETS_MS.indexOf(10)], 1); // 5 < 7 <= 10
  assert.equal(byCode.get(403)!.buckets.at(-1), 1); // +Inf
});

Deno.test("istio metrics: past MAX_LABEL_SETS new peers fold into source labels unknown", () => {
  const m = new IstioMetrics();
  for (let i = 0; i < MAX_LABEL_SETS; i++) m.labels({ ...LABELS, source_principal: `p${i}` });
  const extra = m.labels({ ...LABELS, source_principal: "one-too-many" });
  assert.equal(extra.values[ISTIO_LABELS.indexOf("source_principal")], "unknown");
  assert.equal(extra.values[ISTIO_LABELS.indexOf("destination_workload")], "destination_workload-v");
  assert.equal(m.labels({ ...LABELS, source_principal: "another" }), extra);
});

Deno.test("istio metrics: workers' series merge; Prometheus text with cumulative buckets", () => {
  const w1 = new IstioMetrics();
  const w2 = new IstioMetrics();
  w1.labels(LABELS).record(200, 3);
  w2.labels(LABELS).record(200, 30);
  w2.labels(LABELS).record(403, 1);
  const merged = mergeIstioSeries([...w1.snapshot(), ...w2.snapshot()]);
  assert.deepEqual(merged.map((s) => [s.code, s.count]), [[200, 2], [403, 1]]);
  const text = formatIstioPrometheus(merged);
  const labels = ISTIO_LABELS.map((k) => `${k}="${k}-v"`).join(",");
  const ok = `${labels},response_code="200",response_flags="-",grpc_response_status=""`;
  assert.ok(text.includes(`# TYPE istio_requests_total counter\nistio_requests_total{${ok}} 2\n`), text);
  assert.ok(text.includes("# TYPE istio_request_duration_milliseconds histogram\n"));
  assert.ok(text.includes(`istio_request_duration_milliseconds_bucket{${ok},le="1"} 0\n`));
  assert.ok(text.includes(`istio_request_duration_milliseconds_bucket{${ok},le="5"} 1\n`));
  assert.ok(text.includes(`istio_request_duration_milliseconds_bucket{${ok},le="50"} 2\n`));
  assert.ok(text.includes(`istio_request_duration_milliseconds_bucket{${ok},le="+Inf"} 2\n`));
  assert.ok(text.includes(`istio_request_duration_milliseconds_sum{${ok}} 33\n`));
  assert.ok(text.includes(`istio_request_duration_milliseconds_count{${ok}} 2\n`));
  assert.equal(formatIstioPrometheus([]), "");
});

Deno.test("istio metrics: gRPC responses count in the request_protocol grpc twin, per gRPC status", () => {
  const m = new IstioMetrics();
  const set = m.labels(LABELS);
  assert.equal(set.grpc(), set.grpc(), "made once");
  set.grpc().record(200, 1, 0);
  set.grpc().record(200, 1, 0);
  set.grpc().record(200, 1, 7);
  set.grpc().record(200, 1, -1);
  set.record(200, 1);
  const protocol = ISTIO_LABELS.indexOf("request_protocol");
  const rows = m.snapshot().map((s) => [s.labels[protocol], s.code, s.grpcStatus, s.count]);
  assert.deepEqual(rows.sort(), [
    ["grpc", 200, "-1", 1],
    ["grpc", 200, "0", 2],
    ["grpc", 200, "7", 1],
    ["request_protocol-v", 200, "", 1],
  ]);
  const text = formatIstioPrometheus(mergeIstioSeries(m.snapshot()));
  assert.match(
    text,
    /^istio_requests_total\{[^}]*request_protocol="grpc"[^}]*response_code="200"[^}]*grpc_response_status="7"\} 1$/m,
  );
});

Deno.test("istio metrics: the metered observer forwards every event and counts responses", () => {
  const seen: string[] = [];
  const inner: SessionObserver = {
    request: () => seen.push("request"),
    response: (s, l) => seen.push(`response ${s} ${l}`),
    upstreamError: (k) => seen.push(k),
    retry: () => seen.push("retry"),
    upgrade: () => seen.push("upgrade"),
  };
  const m = new IstioMetrics();
  const o = new MeteredObserver(inner, m.labels(LABELS));
  o.request();
  o.retry();
  o.upstreamError("protocol_error");
  o.response(502, true);
  o.upgrade();
  assert.deepEqual(seen, ["request", "retry", "protocol_error", "response 502 true", "upgrade"]);
  assert.deepEqual(m.snapshot().map((s) => [s.code, s.count]), [[502, 1]]);
});
