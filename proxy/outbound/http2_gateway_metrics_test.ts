/**
 * Istio's request metrics on a gateway's plain-text HTTP server for HTTP/2 streams, as Istio's stats
 * plugin labels them (`reporter="source"` on a gateway): Debian's python3-grpcio calls through the
 * gateway to a grpcio server behind a `GRPC` port are `request_protocol="grpc"` with
 * `grpc_response_status="0"`, a call the gateway's DENY policy refuses `"7"` (the gateway's own
 * trailers-only reply), and a curl h2c GET `http` with an empty gRPC status; the admin text shows the
 * label.
 */
import assert from "node:assert/strict";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { RecordingLog } from "../inbound/test_support.ts";
import { formatIstioPrometheus, IstioMetrics, mergeIstioSeries } from "../http/istio_metrics.ts";
import { grpcClient, grpcioMissing, run, startGrpcServer } from "../h2proxy/h2_apps_test_support.ts";
import { requestCounts } from "../h2proxy/mesh_pair_test_support.ts";
import { OutboundListener } from "./listener.ts";
import { GATEWAY_ROUTE_NAME, oneRouteGateway } from "./gateway_test_support.ts";

const HOST = "echo.example.com";

Deno.test(requires(grpcioMissing() ?? commandMissing("curl"), {
  name: "gateway: HTTP/2 gRPC streams count as request_protocol grpc with their grpc_response_status",
  async fn() {
    const app = await startGrpcServer();
    const snapshot = {
      ...oneRouteGateway(HOST, app.port, "GRPC"),
      authorizations: {
        "foo/deny-unary": {
          name: "deny-unary",
          namespace: "foo",
          action: "DENY",
          rules: [{ to: [{ operation: { paths: ["/test.Echo/Unary"] } }] }],
        },
      },
    };
    const metrics = new IstioMetrics();
    const gw = new OutboundListener({
      address: "127.0.0.1",
      port: 0,
      snapshot: () => snapshot,
      log: new RecordingLog(),
      routeNames: [GATEWAY_ROUTE_NAME],
      requestMetrics: metrics,
    });
    await gw.start();
    try {
      const r = await grpcClient(`127.0.0.1:${gw.port}`, `${HOST}:80`, ["unary", "server_stream", "bidi"]);
      assert.deepEqual(r.unary, { code: "PERMISSION_DENIED", details: "RBAC: access denied" });
      assert.equal(r.server_stream.code, "OK");
      assert.equal(r.bidi.code, "OK");
      const h2c = await run("curl", [
        "-sS",
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        "-w",
        "%{http_version}",
        "-H",
        `Host: ${HOST}`,
        `http://127.0.0.1:${gw.port}/`,
      ]);
      assert.equal(h2c.stdout, "2", h2c.stderr);
      const service = { destination_service: "app.foo.svc.cluster.local" };
      const counts = requestCounts(metrics, service, true);
      assert.equal(counts["source grpc 200 0"], 2, JSON.stringify(counts));
      assert.equal(counts["source grpc 403 7"], 1, JSON.stringify(counts));
      const http = Object.entries(counts).filter(([k]) => k.startsWith("source http "));
      assert.equal(http.length, 1, JSON.stringify(counts));
      assert.match(http[0][0], /^source http \d+ $/, "an empty gRPC status");
      const text = formatIstioPrometheus(mergeIstioSeries(metrics.snapshot()));
      assert.match(
        text,
        /^istio_requests_total\{reporter="source",[^}]*request_protocol="grpc",[^}]*grpc_response_status="7"\} 1$/m,
      );
      assert.match(
        text,
        /^istio_requests_total\{reporter="source",[^}]*request_protocol="http",[^}]*grpc_response_status=""\} 1$/m,
      );
    } finally {
      await gw.close();
      await app.stop();
    }
  },
}));
