/**
 * The route timeout (VirtualService `http[].timeout`) on HTTP/1.1 requests through a gateway's
 * plain-text HTTP server in front of Debian's httpbin, with curl: `/delay/5` under a 1 s route gets
 * Envoy's 504 `upstream request timeout` and its upstream connection is closed, not pooled; a
 * response that started and then trickles (`/drip`) is cut by a reset of the client's connection; an
 * upload slower than the timeout is timed from the end of its body (Envoy's `onRequestComplete`) and served.
 */
import assert from "node:assert/strict";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { Httpbin } from "../inbound/test_support.ts";
import { run } from "../h2proxy/h2_apps_test_support.ts";
import { oneRouteGateway, startOneRouteGateway } from "./gateway_test_support.ts";

const HOST = "httpbin.example.com";

Deno.test(requires(httpbinMissing() ?? commandMissing("curl"), {
  name: "gateway: the route timeout on HTTP/1.1 requests: 504 before the response, a reset after it",
  async fn(t) {
    const httpbin = await Httpbin.start();
    const snapshot = oneRouteGateway(HOST, httpbin.port, "HTTP", 1000);
    const { gw, stats } = await startOneRouteGateway(snapshot);
    const curl = async (path: string, args: string[] = []) => {
      const started = Date.now();
      const r = await run("curl", [
        "-sS",
        "--max-time",
        "15",
        "-w",
        "\n%{http_code}",
        "-H",
        `Host: ${HOST}`,
        ...args,
        `http://127.0.0.1:${gw.port}${path}`,
      ]);
      const nl = r.stdout.lastIndexOf("\n");
      return {
        code: r.code,
        status: Number(r.stdout.slice(nl + 1)),
        body: r.stdout.slice(0, nl),
        seconds: (Date.now() - started) / 1000,
      };
    };
    try {
      await t.step("/delay/5 with a 1 s route timeout: 504 upstream request timeout", async () => {
        const r = await curl("/delay/5");
        assert.equal(r.code, 0);
        assert.equal(r.status, 504);
        assert.equal(r.body, "upstream request timeout");
        assert.ok(r.seconds < 4, `answered after ${r.seconds} s`);
        assert.equal(stats().upstream_rq_timeout, 1);
      });

      await t.step("the timed-out connection was closed: the next request opens another", async () => {
        assert.equal(stats().upstream_cx_total, 1);
        assert.equal((await curl("/get")).status, 200);
        assert.equal(stats().upstream_cx_total, 2);
      });

      await t.step(
        "a response that started, then trickles past the timeout: the connection is reset",
        async () => {
          const r = await curl("/drip?duration=5&numbytes=5&delay=0&code=200");
          assert.notEqual(r.code, 0, "curl saw the response cut");
          assert.ok(r.seconds < 4, `cut after ${r.seconds} s`);
          assert.equal(stats().upstream_rq_timeout, 2);
        },
      );

      await t.step("an upload slower than the timeout (2.5 s) is timed from its end: served", async () => {
        const file = await Deno.makeTempFile({ suffix: ".txt" });
        try {
          await Deno.writeTextFile(file, "z".repeat(500 * 1024));
          const r = await curl("/anything", [
            "--limit-rate",
            "200k",
            "--data-binary",
            `@${file}`,
            "-H",
            "content-type: text/plain",
          ]);
          assert.equal(r.status, 200);
          assert.ok(r.seconds > 1.5, `the upload took ${r.seconds} s only`);
          assert.equal(JSON.parse(r.body).data.length, 500 * 1024);
          assert.equal(stats().upstream_rq_timeout, 2);
        } finally {
          await Deno.remove(file);
        }
      });
    } finally {
      await gw.close();
      await httpbin.stop();
    }
  },
}));
