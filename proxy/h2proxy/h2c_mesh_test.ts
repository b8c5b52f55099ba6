/**
 * h2c applications through a client proxy and a server proxy with STRICT mutual TLS, with real
 * clients and servers: curl `--http2-prior-knowledge` and nghttp (nghttp2-client) against
 * python3-hypercorn (an ASGI echo, port protocol HTTP2: ALPN h2 between the proxies) and nghttpd
 * (nghttp2-server, port protocol auto-detected: the inbound offers no ALPN h2 and recognizes the
 * preface inside TLS). Many streams from several client connections share few connections between
 * the proxies and to the application (the proxies' counters). The same pair still carries
 * HTTP/1.1, and the filter chain answers HTTP/2 requests (403, 400) as it answers HTTP/1.1 ones.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { h2cToolsMissing, nghttpStreams, run, startHypercorn, startNghttpd } from "./h2_apps_test_support.ts";
import {
  CLIENT_ID,
  ECHO_HOST,
  ECHO_PORT,
  pairCerts,
  requestCounts,
  SERVER_ID,
  startPair,
} from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;

/** curl through the client proxy with the service's authority; status line and body. */
async function curl(outbound: string, path: string, args: string[] = []) {
  const r = await run("curl", [
    "-sS",
    "--max-time",
    "10",
    "--path-as-is",
    "-o",
    "-",
    "-w",
    "\n%{http_version} %{http_code}",
    ...args,
    "-H",
    `Host: ${AUTHORITY}`,
    `http://${outbound}${path}`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const nl = r.stdout.lastIndexOf("\n");
  const [version, status] = r.stdout.slice(nl + 1).split(" ");
  return { version, status: Number(status), body: r.stdout.slice(0, nl) };
}

Deno.test(requires(h2cToolsMissing(), {
  name: "h2c through two proxies under STRICT mTLS: curl, nghttp, hypercorn, nghttpd, multiplexed",
  async fn(t) {
    const certs = await pairCerts();
    const dir = await Deno.makeTempDir({ prefix: "h2mesh-" });
    const hypercorn = await startHypercorn(dir);
    const pair = await startPair(certs, hypercorn.port, "HTTP2");
    try {
      await t.step("curl --http2-prior-knowledge: normalized path, :authority, XFCC at the app", async () => {
        const r = await curl(pair.outboundAddress, "/a/../echo?x=1", ["--http2-prior-knowledge"]);
        assert.equal(r.version, "2");
        assert.equal(r.status, 200);
        const seen = JSON.parse(r.body);
        assert.equal(seen.http_version, "2");
        assert.equal(seen.path, "/echo");
        assert.equal(seen.query, "x=1");
        assert.equal(seen.headers.host, AUTHORITY);
        assert.match(
          seen.headers["x-forwarded-client-cert"],
          new RegExp(`By=${SERVER_ID};.*URI=${CLIENT_ID}`),
        );
        assert.ok(
          pair.serverLog.entries.some((e) => e.msg === "HTTP/2 connection" && e.fields?.via === "alpn"),
        );
      });

      await t.step("a 3 MiB upload and its echo", async () => {
        const file = join(dir, "upload.bin");
        await Deno.writeFile(file, new Uint8Array(3 * 1024 * 1024).fill(7));
        const r = await curl(pair.outboundAddress, "/upload", [
          "--http2-prior-knowledge",
          "--data-binary",
          `@${file}`,
        ]);
        assert.equal(r.status, 200);
        assert.equal(JSON.parse(r.body).body_bytes, 3 * 1024 * 1024);
      });

      await t.step(
        "200 streams from 10 clients: at most 2 connections between the proxies and to the app",
        async () => {
          const before = { out: pair.outboundStats.snapshot(), inb: pair.inboundStats.snapshot() };
          const clients = Array.from({ length: 10 }, () =>
            run("nghttp", [
              "-n",
              "-s",
              "-m",
              "20",
              "-H",
              `:authority: ${AUTHORITY}`,
              `http://${pair.outboundAddress}/m`,
            ]));
          const results = await Promise.all(clients);
          for (const r of results) {
            assert.equal(r.code, 0, r.stderr);
            assert.equal(
              r.stdout.split("\n").filter((l) => / 200 /.test(l)).length,
              20,
              r.stdout,
            );
          }
          const out = pair.outboundStats.snapshot(), inb = pair.inboundStats.snapshot();
          assert.equal(out.downstream_cx_http2_total - before.out.downstream_cx_http2_total, 10);
          // The server proxy allows 100 concurrent streams per connection (Envoy's edge value): 200
          // at once need a second connection, never one per client.
          assert.ok(out.upstream_cx_total <= 2, `${out.upstream_cx_total} connections between the proxies`);
          assert.ok(
            inb.upstream_cx_total <= 2,
            `${inb.upstream_cx_total} h2c connections to the application`,
          );
        },
      );

      await t.step("HTTP/1.1 from the app still works through the same pair", async () => {
        const r = await curl(pair.outboundAddress, "/h1", ["--http1.1"]);
        assert.equal(r.version, "1.1");
        assert.equal(r.status, 200);
        assert.equal(JSON.parse(r.body).http_version, "1.1");
      });

      await t.step("the filter chain answers HTTP/2: DENY 403 RBAC: access denied, %00 400", async () => {
        pair.setPolicies([{
          name: "deny-admin",
          namespace: "foo",
          action: "DENY",
          rules: [{ to: [{ operation: { paths: ["/admin"] } }] }],
        }]);
        const denied = await curl(pair.outboundAddress, "/x/../admin", ["--http2-prior-knowledge"]);
        assert.deepEqual([denied.version, denied.status, denied.body], ["2", 403, "RBAC: access denied"]);
        const bad = await curl(pair.outboundAddress, "/a%00b", ["--http2-prior-knowledge"]);
        assert.equal(bad.status, 400);
        pair.setPolicies([]);
      });

      await t.step("Istio's request metrics count HTTP/2 streams on both proxies", () => {
        const client = requestCounts(pair.clientMetrics, { destination_service: ECHO_HOST });
        const server = requestCounts(pair.serverMetrics, { source_principal: CLIENT_ID });
        // curl, the upload, 200 nghttp streams, 1 HTTP/1.1 request: 203 answered 200 on each side; the
        // denial (the %00 target never left the client proxy, whose own answer has no destination).
        assert.deepEqual(client, { "source 200": 203, "source 403": 1 });
        assert.deepEqual(server, { "destination 200": 203, "destination 403": 1 });
      });
    } finally {
      await pair.stop();
      await hypercorn.stop();
    }

    await t.step("nghttpd on an auto-detected port: the preface inside mutual TLS, 100 streams", async () => {
      await Deno.writeTextFile(join(dir, "index.html"), "hello from nghttpd\n");
      const nghttpd = await startNghttpd(dir);
      const auto = await startPair(certs, nghttpd.port, "");
      try {
        const out = await nghttpStreams(auto.outboundAddress, AUTHORITY, "/index.html", 100);
        assert.equal(out.split("\n").filter((l) => / 200 +19 /.test(l)).length, 100, out);
        assert.ok(
          auto.serverLog.entries.some((e) => e.msg === "HTTP/2 connection" && e.fields?.via === "preface"),
        );
        assert.equal(auto.inboundStats.snapshot().downstream_cx_mtls_total, 1);
        const body = await curl(auto.outboundAddress, "/index.html", ["--http2-prior-knowledge"]);
        assert.equal(body.body, "hello from nghttpd\n");
      } finally {
        await auto.stop();
        await nghttpd.stop();
      }
    });
    await Deno.remove(dir, { recursive: true });
  },
}));
