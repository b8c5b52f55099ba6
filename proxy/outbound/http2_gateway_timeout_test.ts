/**
 * The route timeout (VirtualService `http[].timeout`, a gateway route's `timeoutMs`) on HTTP/2
 * streams through a gateway's plain-text HTTP server, in front of a python3-h2 application that
 * never answers (../h2proxy/hostile_h2_app.py), so that what answers is the gateway: Envoy's 504
 * `upstream request timeout` to curl, and to a gRPC client (python3-grpcio with a 30 s deadline,
 * curl with `grpc-timeout: 30S`) trailers-only UNAVAILABLE, the route timeout capping the longer
 * `grpc-timeout` as Istio's `max_grpc_timeout` does; the application's stream reset with CANCEL.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  curlGrpc,
  grpcClient,
  grpcFrame,
  grpcioMissing,
  pythonH2Missing,
  run,
  startHostileApp,
} from "../h2proxy/h2_apps_test_support.ts";
import { CANCEL } from "../../shared/internal/http2/frame.ts";
import { oneRouteGateway, startOneRouteGateway } from "./gateway_test_support.ts";

const HOST = "slow.example.com";

Deno.test(requires(pythonH2Missing() ?? grpcioMissing() ?? commandMissing("curl"), {
  name:
    "gateway: a VirtualService timeout on an HTTP/2 route: 504, or UNAVAILABLE for gRPC, capping grpc-timeout",
  async fn(t) {
    const app = await startHostileApp();
    const snapshot = oneRouteGateway(HOST, app.port, "GRPC", 1000);
    const { gw, stats } = await startOneRouteGateway(snapshot);
    const dir = await Deno.makeTempDir();
    const frame = join(dir, "request.bin");
    await Deno.writeFile(frame, grpcFrame("x"));
    const curl = (args: string[]) =>
      run("curl", [
        "-sS",
        "--http2-prior-knowledge",
        "--max-time",
        "15",
        "-D",
        "-",
        "-H",
        `Host: ${HOST}`,
        ...args,
      ]);
    try {
      await t.step("curl, no answer within the route's 1 s: 504 upstream request timeout", async () => {
        const started = Date.now();
        const r = await curl([`http://127.0.0.1:${gw.port}/stall`]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^HTTP\/2 504 \r\n/);
        assert.ok(r.stdout.endsWith("\r\n\r\nupstream request timeout"), r.stdout);
        assert.ok((Date.now() - started) / 1000 < 10);
        assert.equal(stats().upstream_rq_timeout, 1);
      });

      await t.step(
        "gRPC with grpc-timeout 30S: the route's 1 s caps it: UNAVAILABLE, trailers-only",
        async () => {
          const started = Date.now();
          const r = await curlGrpc(`127.0.0.1:${gw.port}`, HOST, "/stall", frame, "30S");
          assert.equal(r.code, 0, r.stderr);
          assert.equal(r.status, "200");
          assert.equal(r.headers["grpc-status"], "14");
          assert.equal(r.headers["grpc-message"], "upstream request timeout");
          assert.equal(r.bytes, 0);
          assert.ok((Date.now() - started) / 1000 < 10);
        },
      );

      await t.step("python3-grpcio with a 30 s deadline: UNAVAILABLE upstream request timeout", async () => {
        const r = await grpcClient(`127.0.0.1:${gw.port}`, HOST, ["route_timeout"]);
        assert.equal(r.route_timeout.code, "UNAVAILABLE");
        assert.equal(r.route_timeout.details, "upstream request timeout");
        assert.ok((r.route_timeout.seconds as number) < 10, `after ${r.route_timeout.seconds} s`);
        assert.equal(stats().upstream_rq_timeout, 3);
      });

      await t.step("each expired stream was reset at the application with CANCEL", async () => {
        const r = await run("curl", [
          "-sS",
          "--http2-prior-knowledge",
          "-H",
          `Host: ${HOST}`,
          `http://127.0.0.1:${gw.port}/resets`,
        ]);
        assert.deepEqual(JSON.parse(r.stdout), [CANCEL, CANCEL, CANCEL]);
      });
    } finally {
      await gw.close();
      await app.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
