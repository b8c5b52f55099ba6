import assert from "node:assert/strict";
import { collectStats } from "./stats.ts";

Deno.test("collectStats: the outbound listener's tcp.<cluster> counters keep Envoy's tcp_proxy names, summed over workers", () => {
  const counters = (n: number) => ({
    downstream_cx_total: n,
    "tcp.outbound|9000||echo.ext.svc.cluster.local.downstream_cx_total": n,
    "tcp.PassthroughCluster.downstream_cx_rx_bytes_total": 10 * n,
  });
  const stats = collectStats(
    [{ worker: 0, listeners: [{ port: 15001, counters: counters(1) }] }, {
      worker: 1,
      listeners: [{ port: 15001, counters: counters(2) }],
    }],
    [{ address: "127.0.0.1", port: 15001, direction: "outbound" }],
    { concurrency: 2, uptimeSeconds: 1, state: 0, controlPlaneConnected: true, now: 0 },
  );
  const byName = new Map(stats.map((s) => [s.name, s]));
  assert.equal(byName.get("listener.127.0.0.1_15001.downstream_cx_total")?.value, 3);
  const tcp = byName.get("tcp.outbound|9000||echo.ext.svc.cluster.local.downstream_cx_total");
  assert.deepEqual(tcp && { value: tcp.value, prom: tcp.prom, labels: tcp.labels }, {
    value: 3,
    prom: "envoy_tcp_downstream_cx_total",
    labels: { envoy_tcp_prefix: "outbound|9000||echo.ext.svc.cluster.local" },
  });
  assert.equal(byName.get("tcp.PassthroughCluster.downstream_cx_rx_bytes_total")?.value, 30);
  assert.ok(![...byName.keys()].some((n) => n.startsWith("listener.127.0.0.1_15001.tcp.")));
});
