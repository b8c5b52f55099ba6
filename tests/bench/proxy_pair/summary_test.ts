/** The proxy pair bench's headline and floor ratios (pure). */
import assert from "node:assert/strict";
import { headline, headlineText, pairCpuUsPerRequest, type TargetResult, versusFloors } from "./summary.ts";

const side = (cpu: Record<string, number>, requests: number, rps: number, hwm: Record<string, number>) =>
  ({
    throughput: { rps, requests, cpu_s: { app: 5, ...cpu } },
    latency: { p50_ms: 1, p90_ms: 2, p99_ms: 3, cpu_s: {} },
    mem_mib: Object.fromEntries(Object.entries(hwm).map(([p, h]) => [p, { rss: h - 1, hwm: h }])),
  }) satisfies TargetResult;

const mesh = side({ client_proxy: 0.6, server_proxy: 0.6 }, 10_000, 5_000, {
  client_proxy: 140,
  server_proxy: 130,
});
const haproxy = side({ client_haproxy: 0.25, server_haproxy: 0.25 }, 10_000, 10_000, {
  client_haproxy: 17,
  server_haproxy: 22,
});
const nodeTls = side({ client_pipe: 0.4, server_pipe: 0.4 }, 10_000, 8_000, {
  client_pipe: 70,
  server_pipe: 65,
});

Deno.test("proxy_pair summary: CPU per request counts the pair, not the app, over wrk's requests", () => {
  assert.equal(pairCpuUsPerRequest(mesh), 120);
  assert.equal(pairCpuUsPerRequest(haproxy), 50);
  assert.equal(pairCpuUsPerRequest(undefined), null);
  assert.equal(pairCpuUsPerRequest({ ...mesh, throughput: { ...mesh.throughput, requests: 0 } }), null);
});

Deno.test("proxy_pair summary: the headline ratio and VmHWM per process", () => {
  const h = headline({ mesh, haproxy, node_tls: nodeTls });
  assert.equal(h.cpu_per_request_mesh_vs_haproxy, 2.4);
  assert.deepEqual(h.cpu_us_per_request, { mesh: 120, haproxy: 50, node_tls: 80 });
  assert.deepEqual(h.vmhwm_mib.node_tls, { client_pipe: 70, server_pipe: 65 });
  assert.equal(headline({ mesh }).cpu_per_request_mesh_vs_haproxy, null);
});

Deno.test("proxy_pair summary: every mesh figure against each floor that ran", () => {
  const none = { p50: null, p99: null };
  assert.deepEqual(versusFloors({ mesh, node_tls: nodeTls }), {
    node_tls: {
      cpu_per_request: 1.5,
      throughput: 0.625,
      added_latency: none,
      vmhwm: { client: 2, server: 2, peak: 2 },
    },
  });
  const noMesh = versusFloors({ node_tls: nodeTls }).node_tls;
  assert.deepEqual(noMesh, {
    cpu_per_request: null,
    throughput: null,
    added_latency: none,
    vmhwm: { client: null, server: null, peak: null },
  });
  // Added latency: mesh p50 3 - 1 = 2 ms against the floor's 1.5 - 1; the floor's p99 adds nothing.
  const direct = { ...mesh, latency: { ...mesh.latency, p50_ms: 1, p99_ms: 3 } };
  const meshSlow = { ...mesh, latency: { ...mesh.latency, p50_ms: 3, p99_ms: 9 } };
  const floorLat = { ...nodeTls, latency: { ...nodeTls.latency, p50_ms: 1.5, p99_ms: 2 } };
  assert.deepEqual(versusFloors({ direct, mesh: meshSlow, node_tls: floorLat }).node_tls.added_latency, {
    p50: 4,
    p99: null,
  });
  assert.match(headlineText({ mesh, haproxy, node_tls: nodeTls }, "abc: cmd"), /mesh 120 µs = 2.4× HAProxy/);
});
