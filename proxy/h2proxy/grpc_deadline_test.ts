/**
 * Stream timeouts of the HTTP/2 path through a client proxy and a server proxy under STRICT mutual
 * TLS. `grpc-timeout` honoured by the proxy: curl as the client (it sends the header without
 * enforcing it) and a python3-h2 application that never answers (./hostile_h2_app.py; a gRPC server
 * enforces the same deadline itself and would race the proxy), so that what answers at the deadline
 * can only be the proxy: Envoy's 504 `upstream request timeout`, gRPC UNAVAILABLE, trailers-only,
 * the application's stream reset with CANCEL; after the response head, a reset of the client's
 * stream. With python3-grpcio on both ends (./grpc_test_app.py): a deadline cancels the
 * application's call, and `--requestTimeout` answers a client stream that stalls (408
 * `request timeout`, gRPC UNKNOWN).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { CANCEL } from "../../shared/internal/http2/frame.ts";
import {
  curlGrpc,
  grpcClient,
  grpcFrame,
  grpcioMissing,
  pythonH2Missing,
  run,
  startGrpcServer,
  startHostileApp,
} from "./h2_apps_test_support.ts";
import { ECHO_HOST, ECHO_PORT, pairCerts, startPair } from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;

/** The RST_STREAM codes the hostile application received so far. */
async function resetsSeen(outbound: string): Promise<number[]> {
  const r = await run("curl", [
    "-sS",
    "--http2-prior-knowledge",
    "--max-time",
    "10",
    "-H",
    `Host: ${AUTHORITY}`,
    `http://${outbound}/resets`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

Deno.test(requires(pythonH2Missing() ?? commandMissing("curl"), {
  name: "grpc-timeout through two proxies: the proxy answers at the deadline, or resets after the head",
  async fn(t) {
    const certs = await pairCerts();
    // An application that never answers (python3-h2): what the client gets at the deadline is the proxy's.
    const app = await startHostileApp();
    const pair = await startPair(certs, app.port, "GRPC");
    const dir = await Deno.makeTempDir();
    const frame = join(dir, "request.bin");
    await Deno.writeFile(frame, grpcFrame("x"));
    try {
      await t.step(
        "no answer within grpc-timeout 1S: UNAVAILABLE upstream request timeout, trailers-only",
        async () => {
          const started = Date.now();
          const r = await curlGrpc(pair.outboundAddress, AUTHORITY, "/stall", frame, "1S");
          const seconds = (Date.now() - started) / 1000;
          assert.equal(r.code, 0, r.stderr);
          // Envoy's answer: :status 200, grpc-status 14, the router's body as grpc-message, no body.
          assert.equal(r.status, "200");
          assert.equal(r.headers["content-type"], "application/grpc");
          assert.equal(r.headers["grpc-status"], "14");
          assert.equal(r.headers["grpc-message"], "upstream request timeout");
          assert.equal(r.bytes, 0);
          assert.ok(seconds < 10, `answered after ${seconds} s`);
          assert.equal(pair.outboundStats.snapshot().upstream_rq_timeout, 1);
          // The application's stream was reset with CANCEL (by the server proxy, at the same deadline).
          assert.deepEqual(await resetsSeen(pair.outboundAddress), [CANCEL]);
        },
      );

      await t.step("the deadline after the response head: the client's stream is reset", async () => {
        const started = Date.now();
        const r = await curlGrpc(pair.outboundAddress, AUTHORITY, "/stall-body", frame, "1S");
        const seconds = (Date.now() - started) / 1000;
        // The head and the first message (10 bytes) came, then RST_STREAM instead of the trailers
        // (curl's -D shows trailers too: no grpc-status).
        assert.equal(r.status, "200");
        assert.equal(r.bytes, 10);
        assert.equal(r.headers["grpc-status"], undefined);
        assert.ok(seconds < 10, `ended after ${seconds} s`);
        assert.equal(pair.outboundStats.snapshot().upstream_rq_timeout, 2);
        assert.deepEqual(await resetsSeen(pair.outboundAddress), [CANCEL, CANCEL]);
      });
    } finally {
      await pair.stop();
      await app.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));

Deno.test(requires(grpcioMissing(), {
  name:
    "python3-grpcio through two proxies: a deadline cancels the call; --requestTimeout on a stalled stream",
  async fn(t) {
    const certs = await pairCerts();
    const app = await startGrpcServer();
    const pair = await startPair(certs, app.port, "GRPC", { requestTimeoutMs: 2000 });
    const cancelled = async (): Promise<number> =>
      (await grpcClient(pair.outboundAddress, AUTHORITY, ["cancelled"])).cancelled.count as number;
    try {
      await t.step(
        "a 0.5 s deadline on a 5 s call: DEADLINE_EXCEEDED, the application's call cancelled",
        async () => {
          const r = await grpcClient(pair.outboundAddress, AUTHORITY, ["deadline"]);
          assert.equal(r.deadline.code, "DEADLINE_EXCEEDED");
          assert.ok((r.deadline.seconds as number) < 5, `ended after ${r.deadline.seconds} s`);
          assert.equal(await cancelled(), 1);
        },
      );

      await t.step("--requestTimeout 2s: a client stream still sending gets 408, gRPC UNKNOWN", async () => {
        const r = await grpcClient(pair.outboundAddress, AUTHORITY, ["slow_client_stream"]);
        assert.deepEqual(r.slow_client_stream, { code: "UNKNOWN", details: "request timeout" });
        assert.equal(pair.outboundStats.snapshot().downstream_rq_timeout, 1);
      });
    } finally {
      await pair.stop();
      await app.stop();
    }
  },
}));
