/**
 * `meshctl x metrics` against the test API server: without Prometheus it says so and exits 1; with a
 * pod labelled app=prometheus at 127.0.0.1 it queries, through the API server's pods/portforward, a
 * stand-in Prometheus (Deno.serve answering /api/v1/query in Prometheus's JSON shape and recording the
 * PromQL it received; no Prometheus binary is installed here).
 */
import assert from "node:assert/strict";
import { meshctl } from "../../../meshctl/test_support.ts";
import { defaultOrchFlags, orchClient } from "../../../meshctl/orch/orch_client.ts";
import { startOrchTestApi } from "./orch_support.ts";

const ANSWERS: [RegExp, string][] = [
  [/^histogram_quantile\(0\.5,/, "12.7"],
  [/^histogram_quantile\(0\.9,/, "45"],
  [/^histogram_quantile\(0\.99,/, "NaN"],
  [/response_code=~/, "0.25"],
  [/^sum\(rate\(istio_requests_total/, "2.5"],
];

Deno.test("x metrics: no Prometheus is an error; else the PromQL of istioctl through a port-forward", async () => {
  const t = await startOrchTestApi();
  const queries: string[] = [];
  const prom = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname !== "/api/v1/query") return new Response("not found", { status: 404 });
    const q = url.searchParams.get("query") ?? "";
    queries.push(q);
    const value = ANSWERS.find(([re]) => re.test(q))?.[1];
    const result = value === undefined ? [] : [{ metric: {}, value: [1700000000, value] }];
    return Response.json({ status: "success", data: { resultType: "vector", result } });
  });
  const env = { KUBECONFIG: "" };
  try {
    const none = await meshctl(["-c", t.kubeconfig, "x", "metrics", "httpbin"], { env });
    assert.equal(none.code, 1, none.err);
    assert.equal(none.err, "Error: Prometheus is not installed in namespace mesh-system\n");
    assert.equal(none.out, "");

    const client = orchClient({ ...defaultOrchFlags(), orchconfig: t.kubeconfig }, {});
    try {
      const path = "/api/v1/namespaces/mesh-system/pods";
      const metadata = { name: "prometheus-0", namespace: "mesh-system", labels: { app: "prometheus" } };
      const ports = [{ containerPort: prom.addr.port }];
      await client.api.json("POST", path, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata,
          spec: { containers: [{ name: "p", image: "p", ports }] },
        },
      });
      await client.api.json("PUT", `${path}/prometheus-0/status`, {
        body: { apiVersion: "v1", kind: "Pod", metadata, status: { phase: "Running", podIP: "127.0.0.1" } },
      });
    } finally {
      await client.close();
    }

    const run = await meshctl(["-c", t.kubeconfig, "x", "metrics", "httpbin", "sleep.bar", "-d", "30s"], {
      env,
    });
    assert.equal(run.code, 0, run.err);
    const lines = run.out.split("\n");
    assert.match(lines[0], /^\s+WORKLOAD\s+TOTAL RPS\s+ERROR RPS\s+P50 LATENCY\s+P90 LATENCY\s+P99 LATENCY$/);
    assert.match(lines[1], /^\s+httpbin\s+2\.500\s+0\.250\s+12ms\s+45ms\s+0ms$/);
    assert.match(lines[2], /^\s+sleep\s+2\.500\s+0\.250\s+12ms\s+45ms\s+0ms$/);
    assert.equal(queries.length, 10);
    const sel = (wl: string, ns: string) =>
      `reporter="destination",destination_workload=~"${wl}",destination_workload_namespace=~"${ns}"`;
    assert.deepEqual(queries.slice(0, 5), [
      `sum(rate(istio_requests_total{${sel("httpbin", "foo")}}[30s]))`,
      `sum(rate(istio_requests_total{${sel("httpbin", "foo")},response_code=~"[45][0-9]{2}"}[30s]))`,
      ...[0.5, 0.9, 0.99].map((q) =>
        `histogram_quantile(${q}, sum(rate(istio_request_duration_milliseconds_bucket{${
          sel("httpbin", "foo")
        }}[30s])) by (le))`
      ),
    ]);
    assert.equal(queries[5], `sum(rate(istio_requests_total{${sel("sleep", "bar")}}[30s]))`);
  } finally {
    await prom.shutdown();
    await t.stop();
  }
});
