/**
 * Hostile HTTP/2 peers on both sides of the proxy pair (python3-h2, ./hostile_h2_app.py), the proxies
 * under STRICT mutual TLS: an application that sends GOAWAY, or resets a stream before or during its
 * response, and a client that opens and resets streams as fast as it can (CVE-2023-44487, rapid reset).
 * Each is answered as Envoy does (503 / UNAVAILABLE before the response head, a stream reset after it,
 * GOAWAY for the flood), and the proxies keep serving: the next request succeeds.
 */
import assert from "node:assert/strict";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  h2cToolsMissing,
  pythonH2Missing,
  rapidReset,
  run,
  startHostileApp,
} from "./h2_apps_test_support.ts";
import { ECHO_HOST, ECHO_PORT, pairCerts, startPair } from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;

Deno.test(requires(pythonH2Missing() ?? h2cToolsMissing(), {
  name: "hostile HTTP/2 application and client: local replies and resets, and the proxies keep serving",
  async fn(t) {
    const certs = await pairCerts();
    const app = await startHostileApp();
    const pair = await startPair(certs, app.port, "HTTP2");
    const get = async (path: string, extra: string[] = []) => {
      const r = await run("curl", [
        "-sS",
        "-i",
        "--max-time",
        "10",
        "--http2-prior-knowledge",
        ...extra,
        "-H",
        `Host: ${AUTHORITY}`,
        `http://${pair.outboundAddress}${path}`,
      ]);
      const [head, ...body] = r.stdout.split("\r\n\r\n");
      return { code: r.code, head, body: body.join("\r\n\r\n"), stderr: r.stderr };
    };
    const stillServing = async () => {
      const ok = await get("/ok");
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.head, /^HTTP\/2 200/);
      assert.equal(ok.body, "ok");
    };
    try {
      await stillServing();

      await t.step("the application's GOAWAY before a response: 503, then a new connection", async () => {
        const r = await get("/goaway");
        assert.match(r.head, /^HTTP\/2 503/);
        assert.match(r.body, /reset before headers/);
        await stillServing();
        assert.ok(pair.inboundStats.snapshot().upstream_cx_total >= 2, "a new application connection");
      });

      await t.step("RST_STREAM before the response: 503; for gRPC a trailers-only UNAVAILABLE", async () => {
        const r = await get("/rst");
        assert.match(r.head, /^HTTP\/2 503/);
        const g = await get("/rst", ["-H", "content-type: application/grpc", "-H", "te: trailers"]);
        assert.match(g.head, /^HTTP\/2 200/);
        assert.match(g.head, /\r\ngrpc-status: 14\r\n/);
        assert.match(g.head, /\r\ngrpc-message: upstream connect error or disconnect\/reset before headers/);
        await stillServing();
      });

      await t.step(
        "a stream the application's GOAWAY refused is opened again on a new connection",
        async () => {
          const before = pair.inboundStats.snapshot().upstream_cx_total;
          const r = await get("/refuse-once");
          assert.match(r.head, /^HTTP\/2 200/);
          assert.equal(r.body, "ok");
          assert.equal(pair.inboundStats.snapshot().upstream_cx_total, before + 1);
        },
      );

      await t.step(
        "RST_STREAM during the response: the client's stream is reset, not completed",
        async () => {
          const r = await get("/midrst");
          assert.equal(r.code, 92, `curl: HTTP/2 stream error: ${r.stderr}`);
          assert.match(r.stderr, /stream 1 was not closed cleanly/);
          await stillServing();
        },
      );

      await t.step("rapid reset through the outbound listener: GOAWAY, and the proxy serves on", async () => {
        const outcome = await rapidReset(pair.outboundAddress, AUTHORITY, 3000);
        assert.ok(outcome.closed, JSON.stringify(outcome));
        assert.equal(outcome.goaway, 11, `ENHANCE_YOUR_CALM: ${JSON.stringify(outcome)}`);
        await stillServing();
      });
    } finally {
      await pair.stop();
      await app.stop();
    }
  },
}));
