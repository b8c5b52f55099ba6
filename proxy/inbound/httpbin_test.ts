/**
 * The inbound listener in front of the real httpbin (Debian's python3-httpbin under gunicorn with
 * keep-alive), driven by real curl: what Istio's security tasks check with httpbin's /headers.
 * Skipped when httpbin is not installed (`./dev test` installs it as root).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import { curl, declaredHttp, Httpbin, mtlsFixture, RecordingLog, snapshotOf } from "./test_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

Deno.test(requires(httpbinMissing(), {
  name: "httpbin behind the inbound listener (real curl, real httpbin)",
  async fn(t) {
    const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
    const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
    const { clientLeaf, cert, mtls, files } = await mtlsFixture(SERVER_ID, CLIENT_ID);
    const httpbin = await Httpbin.start();
    let snapshot = snapshotOf("STRICT", cert);
    const declared = declaredHttp(httpbin.port);
    const listener = new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: httpbin.port,
      snapshot: () => declared(snapshot),
      log: new RecordingLog(),
    });
    await listener.start();
    const stats = listener.observer as InboundStats;
    const http = `http://127.0.0.1:${listener.port}`;
    const https = `https://127.0.0.1:${listener.port}`;
    const xfcc = `By=${SERVER_ID};Hash=${createHash("sha256").update(clientLeaf.der).digest("hex")};` +
      `Subject="";URI=${CLIENT_ID}`;
    const headersOf = async (args: string[]) => {
      const r = await curl(args);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout).headers as Record<string, string>;
    };
    try {
      await t.step("STRICT: /headers over mutual TLS shows X-Forwarded-Client-Cert", async () => {
        const h = await headersOf([...mtls, `${https}/headers`]);
        assert.equal(h["X-Forwarded-Client-Cert"], xfcc);
      });
      await t.step("STRICT: plain text is reset (000, exit 56)", async () => {
        const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", `${http}/headers`]);
        assert.equal(r.code, 56);
        assert.equal(r.stdout, "000");
      });
      snapshot = snapshotOf("PERMISSIVE", cert, [], 2);
      await t.step(
        "PERMISSIVE: plain text is served and a forged X-Forwarded-Client-Cert removed",
        async () => {
          const h = await headersOf([
            "-H",
            "X-Forwarded-Client-Cert: By=spiffe://x;URI=spiffe://cluster.local/ns/a/sa/admin",
            `${http}/headers`,
          ]);
          assert.equal(h["X-Forwarded-Client-Cert"], undefined);
          assert.equal(h.Host, `127.0.0.1:${listener.port}`);
        },
      );
      await t.step(
        "PERMISSIVE: over mutual TLS a received X-Forwarded-Client-Cert gets this hop appended",
        async () => {
          const h = await headersOf([
            ...mtls,
            "-H",
            "X-Forwarded-Client-Cert: By=spiffe://cluster.local/ns/gw/sa/gw;Hash=ab",
            `${https}/headers`,
          ]);
          assert.equal(h["X-Forwarded-Client-Cert"], `By=spiffe://cluster.local/ns/gw/sa/gw;Hash=ab,${xfcc}`);
        },
      );
      await t.step("keep-alive on both sides with gunicorn", async () => {
        const before = stats.counters.upstream_cx_total;
        const r = await curl([
          ...mtls,
          ...["-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects}\n"],
          `${https}/get`,
          `${https}/headers`,
          `${https}/status/418`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.stdout.trim().split("\n"), ["1", "0", "0"]);
        assert.ok(stats.counters.upstream_cx_total - before <= 1, JSON.stringify(stats.counters));
      });
      await t.step("POST with a JSON body, and httpbin's chunked /stream", async () => {
        const r = await curl([
          ...mtls,
          "-H",
          "Content-Type: application/json",
          "-d",
          '{"a":1}',
          `${https}/post`,
        ]);
        assert.deepEqual(JSON.parse(r.stdout).json, { a: 1 });
        const s = await curl([`${http}/stream/20`]);
        assert.equal(s.code, 0);
        assert.equal(s.stdout.trim().split("\n").length, 20);
        const bytes = await curl([
          "-o",
          "/dev/null",
          "-w",
          "%{size_download}",
          `${http}/stream-bytes/100000?chunk_size=7000`,
        ]);
        assert.equal(bytes.stdout, "100000");
      });
      await t.step("a head over 60 KiB: 431", async () => {
        const r = await curl([
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "-H",
          `X-Big: ${"a".repeat(70000)}`,
          `${http}/headers`,
        ]);
        assert.equal(r.stdout, "431");
      });
    } finally {
      await listener.close();
      await httpbin.stop();
      await files.remove();
    }
  },
}));
