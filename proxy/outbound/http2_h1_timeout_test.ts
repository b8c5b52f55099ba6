/**
 * The timeouts of HTTP/2 streams that go upstream as HTTP/1.1 (../h2proxy/h1_upstream.ts), through
 * a gateway's plain-text HTTP server in front of Debian's httpbin (an `HTTP` port): the route's
 * timeout (VirtualService `http[].timeout`) answers httpbin's `/delay/5` with Envoy's 504
 * `upstream request timeout`, and the HTTP/1.1 connection that carried it is closed, not pooled
 * (the next request opens another); `--requestTimeout` answers a request whose body stalls (a
 * python3-h2 client: curl 7.88 shows no response before its upload ended) with 408 `request timeout`.
 */
import assert from "node:assert/strict";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { Httpbin } from "../inbound/test_support.ts";
import { assertH2, h2curl } from "../h2proxy/h1_test_support.ts";
import { pythonH2Missing, stalledBody } from "../h2proxy/h2_apps_test_support.ts";
import { oneRouteGateway, startOneRouteGateway } from "./gateway_test_support.ts";

const HOST = "httpbin.example.com";

Deno.test(requires(httpbinMissing() ?? pythonH2Missing() ?? commandMissing("curl"), {
  name: "gateway: HTTP/2 streams sent as HTTP/1.1 to httpbin get the route timeout and --requestTimeout",
  async fn(t) {
    const httpbin = await Httpbin.start();
    const snapshot = oneRouteGateway(HOST, httpbin.port, "HTTP", 1000);
    const { gw, stats } = await startOneRouteGateway(snapshot, { requestTimeoutMs: 2000 });
    const dir = await Deno.makeTempDir({ prefix: "h2gw-timeout-" });
    const address = `127.0.0.1:${gw.port}`;
    try {
      await t.step("/delay/5 with a 1 s route timeout: 504 upstream request timeout", async () => {
        const started = Date.now();
        const r = await h2curl(dir, address, HOST, "/delay/5");
        assertH2(r, 504);
        assert.equal(new TextDecoder().decode(r.body), "upstream request timeout");
        assert.ok((Date.now() - started) / 1000 < 4, `answered after ${Date.now() - started} ms`);
        assert.equal(stats().upstream_rq_timeout, 1);
      });

      await t.step("the timed-out connection was closed: the next request opens another", async () => {
        assert.equal(stats().upstream_cx_total, 1);
        assertH2(await h2curl(dir, address, HOST, "/get"), 200);
        assertH2(await h2curl(dir, address, HOST, "/get"), 200);
        // One new connection, then kept alive for the third request.
        assert.equal(stats().upstream_cx_total, 2);
      });

      await t.step("a request body that stalls (python3-h2): 408 request timeout after 2 s", async () => {
        const started = Date.now();
        const r = await stalledBody(address, HOST, "/anything");
        assert.deepEqual(r, { status: 408, body: "request timeout" });
        assert.ok((Date.now() - started) / 1000 < 10);
        assert.equal(stats().downstream_rq_timeout, 1);
      });
    } finally {
      await gw.close();
      await httpbin.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
