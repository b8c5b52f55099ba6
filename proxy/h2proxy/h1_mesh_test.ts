/**
 * HTTP/2 from the application to an HTTP/1.1 application (Debian's httpbin under gunicorn), through a
 * client proxy and a server proxy under STRICT mutual TLS, the service port's protocol being `HTTP`:
 * curl `--http2-prior-knowledge` and nghttp (nghttp2-client) get HTTP/2 answers while httpbin sees
 * HTTP/1.1 (./h1_upstream.ts), as through Istio's sidecars. GET, POST bodies echoed byte for byte
 * (with content-length and without: chunked upstream), a 3 MiB Content-Length response and a
 * chunked one equal to httpbin's own, status codes, HEAD, 100 streams on one connection, and an
 * AuthorizationPolicy denial of the server proxy as an HTTP/2 403.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { httpbinMissing } from "../../shared/internal/testing/prerequisites.ts";
import { Httpbin } from "../inbound/test_support.ts";
import { h2cToolsMissing, nghttpStreams, run } from "./h2_apps_test_support.ts";
import { assertH2, h2curl, headerOf } from "./h1_test_support.ts";
import {
  CLIENT_ID,
  ECHO_HOST,
  ECHO_PORT,
  pairCerts,
  SERVER_ID,
  startPair,
} from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;

/** Printable text of `n` bytes, so that httpbin echoes it in `data` as it is. */
function text(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = 0x21 + ((i * 7919 + (i >> 10)) % 90);
  return out;
}

Deno.test(requires(h2cToolsMissing() ?? httpbinMissing(), {
  name: "h2c to an HTTP/1.1 port through two proxies under STRICT mTLS: curl and nghttp to httpbin",
  async fn(t) {
    const certs = await pairCerts();
    const dir = await Deno.makeTempDir({ prefix: "h1h2mesh-" });
    const httpbin = await Httpbin.start();
    const pair = await startPair(certs, httpbin.port, "HTTP");
    const get = (path: string, args: string[] = [], stdin?: Uint8Array) =>
      h2curl(dir, pair.outboundAddress, AUTHORITY, path, { args, stdin });
    try {
      await t.step("GET: HTTP/2 to the client, HTTP/1.1 at httpbin, Host from :authority, XFCC", async () => {
        const r = await get("/a/../get?x=1");
        assertH2(r, 200);
        const seen = JSON.parse(new TextDecoder().decode(r.body));
        assert.equal(seen.url, `http://${AUTHORITY}/get?x=1`);
        assert.equal(seen.headers.Host, AUTHORITY);
        assert.match(
          seen.headers["X-Forwarded-Client-Cert"],
          new RegExp(`By=${SERVER_ID};.*URI=${CLIENT_ID}`),
        );
        assert.equal(headerOf(r, "content-type"), "application/json");
        assert.ok(
          r.headers.every((l) => !/^(connection|keep-alive|transfer-encoding):/i.test(l)),
          r.headers.join(),
        );
        // The mesh hop was HTTP/1.1: the server proxy served it on its HTTP/1.1 path.
        assert.equal(pair.outboundStats.snapshot().downstream_cx_http2_total, 1);
      });

      await t.step("POST with content-length: 1 MiB echoed byte for byte", async () => {
        const body = text(1024 * 1024);
        const file = join(dir, "upload.txt");
        await Deno.writeFile(file, body);
        const r = await get("/anything", ["--data-binary", `@${file}`, "-H", "content-type: text/plain"]);
        assertH2(r, 200);
        const seen = JSON.parse(new TextDecoder().decode(r.body));
        assert.equal(seen.method, "POST");
        assert.equal(seen.headers["Content-Length"], String(body.length));
        assert.equal(seen.data, new TextDecoder().decode(body));
      });

      await t.step(
        "POST without content-length (stdin): chunked upstream, echoed byte for byte",
        async () => {
          const body = text(300_000);
          const r = await get("/anything", ["-H", "content-type: text/plain"], body);
          assertH2(r, 200);
          const seen = JSON.parse(new TextDecoder().decode(r.body));
          assert.equal(seen.headers["Transfer-Encoding"], "chunked");
          assert.equal(seen.data, new TextDecoder().decode(body));
        },
      );

      await t.step("nghttp POST: 200 KiB echoed byte for byte", async () => {
        const body = text(200 * 1024);
        const file = join(dir, "nghttp.txt");
        await Deno.writeFile(file, body);
        const r = await run("nghttp", [
          "-d",
          file,
          "-H",
          `:authority: ${AUTHORITY}`,
          "-H",
          "content-type: text/plain",
          `http://${pair.outboundAddress}/anything`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(JSON.parse(r.stdout).data, new TextDecoder().decode(body));
      });

      await t.step("a 3 MiB Content-Length response (the upload echoed in `data`)", async () => {
        const file = join(dir, "big.txt");
        const body = text(3 * 1024 * 1024);
        await Deno.writeFile(file, body);
        const r = await get("/anything", ["--data-binary", `@${file}`, "-H", "content-type: text/plain"]);
        assertH2(r, 200);
        assert.ok(r.body.length > 3 * 1024 * 1024);
        assert.equal(headerOf(r, "content-length"), String(r.body.length));
        assert.equal(JSON.parse(new TextDecoder().decode(r.body)).data.length, body.length);
      });

      await t.step("a chunked response equals httpbin's own, without transfer-encoding", async () => {
        const path = "/stream-bytes/102400?seed=7&chunk_size=1000";
        const r = await get(path);
        assertH2(r, 200);
        const direct = new Uint8Array(
          await (await fetch(`http://127.0.0.1:${httpbin.port}${path}`)).arrayBuffer(),
        );
        assert.equal(r.body.length, 102400);
        assert.deepEqual(r.body, direct);
        assert.equal(headerOf(r, "transfer-encoding"), undefined);
      });

      await t.step("status codes: 418 with its body, 204 and 304 without, 500", async () => {
        const teapot = await get("/status/418");
        assertH2(teapot, 418);
        assert.match(new TextDecoder().decode(teapot.body), /teapot/);
        for (const status of [204, 304, 500]) {
          const r = await get(`/status/${status}`);
          assertH2(r, status);
          assert.equal(r.body.length, 0);
        }
      });

      await t.step("HEAD: the GET's headers, no body", async () => {
        // curl -I writes the head where the body would go: nothing may follow it.
        const r = await get("/get", ["-I"]);
        assertH2(r, 200);
        assert.ok(Number(headerOf(r, "content-length")) > 0, r.headers.join());
        const out = new TextDecoder().decode(r.body);
        assert.match(out, /^HTTP\/2 200 \r\n/);
        assert.ok(out.endsWith("\r\n\r\n") && !out.includes("{"), out);
      });

      await t.step("100 concurrent streams on one client connection (nghttp)", async () => {
        const before = pair.outboundStats.snapshot().downstream_cx_http2_total;
        const out = await nghttpStreams(pair.outboundAddress, AUTHORITY, "/get", 100);
        assert.equal(out.split("\n").filter((l) => / 200 /.test(l)).length, 100, out);
        assert.equal(pair.outboundStats.snapshot().downstream_cx_http2_total - before, 1);
      });

      await t.step("the server proxy's DENY is an HTTP/2 403 RBAC: access denied", async () => {
        pair.setPolicies([{
          name: "deny-anything",
          namespace: "foo",
          action: "DENY",
          rules: [{ to: [{ operation: { paths: ["/anything"] } }] }],
        }]);
        const denied = await get("/x/../anything", ["--data-binary", "payload"]);
        assertH2(denied, 403);
        assert.equal(new TextDecoder().decode(denied.body), "RBAC: access denied");
        const allowed = await get("/get");
        assertH2(allowed, 200);
        pair.setPolicies([]);
      });
    } finally {
      await pair.stop();
      await httpbin.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
