/**
 * An h2c client without a sidecar to an `HTTP` port of a server proxy, in front of Debian's httpbin
 * (HTTP/1.1 only): the HTTP/1.1 codec hands the preface over (Envoy's connection manager with codec
 * AUTO takes it, where this proxy answered 505) and each stream reaches httpbin as HTTP/1.1
 * (../h2proxy/h1_upstream.ts), with the inbound filter chain: curl `--http2-prior-knowledge` GET and
 * a 1 MiB POST echoed, nghttp with 50 streams on one connection, an AuthorizationPolicy DENY as an
 * HTTP/2 403, a python3-h2 client sending the preface inside mutual TLS (STRICT, no ALPN) getting this hop's
 * X-Forwarded-Client-Cert, and HTTP/1.1 clients served as before on the same port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  h2cToolsMissing,
  h2Get,
  nghttpStreams,
  pythonH2Missing,
  run,
} from "../h2proxy/h2_apps_test_support.ts";
import { assertH2, h2curl } from "../h2proxy/h1_test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import { Httpbin, mtlsFixture, RecordingLog, snapshotOf, withPortProtocol } from "./test_support.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const fixture = await mtlsFixture(SERVER_ID, CLIENT_ID);
Deno.test.afterAll(() => fixture.files.remove());

Deno.test(requires(h2cToolsMissing() ?? httpbinMissing() ?? pythonH2Missing(), {
  name: "inbound: an h2c client to an HTTP port gets HTTP/2, httpbin HTTP/1.1 (no more 505)",
  async fn(t) {
    const httpbin = await Httpbin.start();
    const dir = await Deno.makeTempDir({ prefix: "h2gw-h2c-" });
    const base = withPortProtocol(snapshotOf("PERMISSIVE", fixture.cert), httpbin.port, "HTTP");
    let snapshot: RuntimeSnapshot = base;
    const listener = new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: httpbin.port,
      snapshot: () => snapshot,
      log: new RecordingLog(),
    });
    await listener.start();
    const stats = () => (listener.observer as InboundStats).snapshot();
    const address = `127.0.0.1:${listener.port}`;
    const seen = (body: Uint8Array) => JSON.parse(new TextDecoder().decode(body));
    try {
      await t.step("curl GET: HTTP/2 to the client, HTTP/1.1 at httpbin, no XFCC in plain text", async () => {
        const r = await h2curl(dir, address, "httpbin.foo", "/get?show_env=1", {
          args: ["-H", "x-forwarded-client-cert: By=forged"],
        });
        assertH2(r, 200);
        const s = seen(r.body);
        assert.equal(s.url, "http://httpbin.foo/get?show_env=1");
        assert.equal(s.headers["X-Forwarded-Client-Cert"], undefined);
        assert.equal(stats().downstream_cx_http2_total, 1);
      });

      await t.step("curl POST 1 MiB: echoed byte for byte", async () => {
        const body = "x".repeat(1024 * 1024);
        const file = join(dir, "upload.txt");
        await Deno.writeTextFile(file, body);
        const r = await h2curl(dir, address, "httpbin.foo", "/anything", {
          args: ["--data-binary", `@${file}`, "-H", "content-type: text/plain"],
        });
        assertH2(r, 200);
        assert.equal(seen(r.body).data, body);
      });

      await t.step("nghttp: 50 streams on one connection", async () => {
        const out = await nghttpStreams(address, "httpbin.foo", "/get", 50);
        assert.equal(out.split("\n").filter((l) => / 200 /.test(l)).length, 50, out);
      });

      await t.step("a DENY policy: HTTP/2 403 RBAC: access denied", async () => {
        snapshot = {
          ...base,
          revision: 2,
          authorizations: {
            "foo/deny": {
              name: "deny",
              namespace: "foo",
              action: "DENY",
              rules: [{ to: [{ operation: { paths: ["/anything"] } }] }],
            },
          } as unknown as RuntimeSnapshot["authorizations"],
        };
        const r = await h2curl(dir, address, "httpbin.foo", "/x/../anything");
        assertH2(r, 403);
        assert.equal(new TextDecoder().decode(r.body), "RBAC: access denied");
        assertH2(await h2curl(dir, address, "httpbin.foo", "/get"), 200);
      });

      await t.step("HTTP/1.1 clients on the same port as before", async () => {
        const r = await run("curl", [
          "-sS",
          "-o",
          "/dev/null",
          "-w",
          "%{http_version} %{http_code}",
          `http://${address}/get`,
        ]);
        assert.equal(r.stdout, "1.1 200");
      });
      await t.step(
        "STRICT: mutual TLS without ALPN, then the preface (python3-h2): this hop's XFCC",
        async () => {
          snapshot = withPortProtocol(snapshotOf("STRICT", fixture.cert, [], 3), httpbin.port, "HTTP");
          const m = fixture.mtls;
          const r = await h2Get(address, "httpbin.foo", "/get", [m[3], m[5], m[1]]);
          assert.equal(r.status, 200, r.body);
          const xfcc = JSON.parse(r.body).headers["X-Forwarded-Client-Cert"];
          assert.match(xfcc, new RegExp(`^By=${SERVER_ID};Hash=[0-9a-f]{64};Subject="";URI=${CLIENT_ID}$`));
        },
      );
    } finally {
      await listener.close();
      await httpbin.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
