/**
 * PERMISSIVE and an application's own TLS (./front.ts): the ClientHello's ALPN decides. An Istio
 * value (a mesh sidecar) gets mutual TLS; none, on a TCP or auto-detected port, passes to the
 * application, whose certificate the client then sees (a real `openssl s_server`, with real
 * `openssl s_client` and curl as unproxied clients). STRICT sends every TLS to mutual TLS. Damaged,
 * oversized and stalled ClientHellos are refused as before ALPN was read.
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { X509Certificate } from "node:crypto";
import type { PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import {
  CertFiles,
  certificateInfo,
  makeCa,
  makeLeaf,
  RecordingLog,
  snapshotOf,
  withPortProtocol,
} from "./test_support.ts";
import { curl } from "./upstream_apps_test_support.ts";
import { MESH_H2_ALPN, MESH_TCP_ALPN } from "../tls/mesh_alpn.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/secure-app";
const CLIENT_ID = "spiffe://cluster.local/ns/bar/sa/sleep";
const ca = await makeCa("Mesh Root CA");
const serverLeaf = await makeLeaf(ca, { uris: [SERVER_ID] });
const serverCert = certificateInfo(serverLeaf, ca, SERVER_ID);
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
// The application's own certificate, from a CA the mesh knows nothing of.
const appCa = await makeCa("App CA");
const appLeaf = await makeLeaf(appCa, { dnsNames: ["app.example"], subject: "CN=app.example" });
const appFingerprint = new X509Certificate(appLeaf.certPem).fingerprint256;
const proxyFingerprint = new X509Certificate(serverLeaf.certPem).fingerprint256;

/** `openssl s_server -www` (an HTTPS app) on a free port, with the application's certificate. */
async function startApp(files: CertFiles): Promise<{ port: number; stop(): Promise<void> }> {
  const port = freePort();
  const child = new Deno.Command("openssl", {
    args: [
      "s_server",
      "-accept",
      `127.0.0.1:${port}`,
      "-cert",
      await files.write("app.pem", appLeaf.certPem),
      "-key",
      await files.write("app-key.pem", appLeaf.keyPem),
      "-www",
      "-quiet",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const up = async () => {
    for (;;) {
      const ok = await new Promise<boolean>((r) => {
        const s = net.connect({ host: "127.0.0.1", port }, () => (s.destroy(), r(true)));
        s.once("error", () => r(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await within(up(), 10_000, "openssl s_server listening");
  return {
    port,
    stop: async () => {
      child.kill();
      await child.status;
    },
  };
}

interface Ctx {
  port: number;
  stats: InboundStats;
  log: RecordingLog;
  set(mode: PortMtls["mode"], protocol?: string, authorizations?: RuntimeSnapshot["authorizations"]): void;
}

/** An inbound listener in front of the TLS app; the port's mode and protocol (none: detected) settable. */
async function withTlsApp(fn: (c: Ctx) => Promise<void>): Promise<void> {
  const files = await CertFiles.create();
  const app = await startApp(files);
  const snapshotFor = (mode: PortMtls["mode"], protocol?: string): RuntimeSnapshot =>
    protocol === undefined
      ? snapshotOf(mode, serverCert)
      : withPortProtocol(snapshotOf(mode, serverCert), app.port, protocol);
  let snapshot = snapshotFor("PERMISSIVE");
  const log = new RecordingLog();
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => snapshot,
    log,
    handshakeTimeoutMs: 1000,
  });
  await listener.start();
  try {
    await fn({
      port: listener.port,
      stats: listener.observer as InboundStats,
      log,
      set: (
        mode,
        protocol,
        authorizations,
      ) => (snapshot = { ...snapshotFor(mode, protocol), ...(authorizations ? { authorizations } : {}) }),
    });
  } finally {
    await listener.close();
    await app.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
}

/** The SHA-256 fingerprint of the certificate a TLS client offering `alpn` sees, or the error. */
function peerFingerprint(
  port: number,
  alpn: readonly string[],
  withMeshCert = false,
): Promise<{ fingerprint?: string; error?: string; alpn?: string | false | null }> {
  return within(
    new Promise((resolve) => {
      const s = tls.connect({
        host: "127.0.0.1",
        port,
        servername: "app.example",
        rejectUnauthorized: false,
        ALPNProtocols: [...alpn],
        ...(withMeshCert ? { cert: clientLeaf.certPem, key: clientLeaf.keyPem } : {}),
      });
      s.once("secureConnect", () => {
        resolve({ fingerprint: s.getPeerCertificate().fingerprint256, alpn: s.alpnProtocol });
        s.destroy();
      });
      s.once("error", (e) => resolve({ error: e.message }));
    }),
    10_000,
    `TLS client with ALPN ${alpn.join(",")}`,
  );
}

/** `openssl s_client` without a client certificate: its output (the subject line) and exit code. */
async function sClient(port: number, caFile: string): Promise<{ code: number; out: string }> {
  const r = await within(
    new Deno.Command("openssl", {
      args: ["s_client", "-connect", `127.0.0.1:${port}`, "-servername", "app.example", "-CAfile", caFile],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output(),
    15_000,
    "openssl s_client",
  );
  const text = new TextDecoder();
  return { code: r.code, out: text.decode(r.stdout) + text.decode(r.stderr) };
}

Deno.test({
  name: "PERMISSIVE: an unproxied client's own TLS reaches the app (its certificate), STRICT refuses it",
  async fn() {
    await withTlsApp(async ({ port, stats, log, set }) => {
      const files = await CertFiles.create();
      try {
        const appCaFile = await files.write("app-ca.pem", appCa.pem);
        for (const protocol of [undefined, "HTTPS", "TLS", "TCP"]) {
          set("PERMISSIVE", protocol);
          const label = `port protocol ${protocol ?? "auto-detected"}`;
          const s = await sClient(port, appCaFile);
          assert.match(s.out, /subject=CN ?= ?app\.example/, `${label}: ${s.out}`);
          assert.match(s.out, /Verify return code: 0 \(ok\)/, label);
          const h2Only = await peerFingerprint(port, ["h2"]);
          assert.equal(h2Only.fingerprint, appFingerprint, `${label}: ALPN h2 only`);
          const noAlpn = await peerFingerprint(port, []);
          assert.equal(noAlpn.fingerprint, appFingerprint, `${label}: no ALPN`);
        }
        const r = await curl([
          "-sS",
          "--cacert",
          appCaFile,
          "--resolve",
          `app.example:${port}:127.0.0.1`,
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          `https://app.example:${port}/`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "200", "curl https to the app through the sidecar");
        const passed = log.entries.filter((e) =>
          e.msg === "TLS without an Istio ALPN passed to the application"
        );
        assert.ok(passed.length >= 13, `each decision is logged at debug: ${passed.length}`);
        assert.equal(passed[0].level, "debug");
        assert.equal(stats.counters.downstream_cx_mtls_total, 0);

        // The port's L4 AuthorizationPolicy applies with no principal: an ALLOW naming one admits no
        // unproxied client, so the app is never reached.
        set(
          "PERMISSIVE",
          "HTTPS",
          {
            "foo/only-sleep": {
              name: "only-sleep",
              namespace: "foo",
              action: "ALLOW",
              rules: [{ from: [{ source: { principals: ["cluster.local/ns/bar/sa/sleep"] } }] }],
            },
          } as unknown as RuntimeSnapshot["authorizations"],
        );
        const denied = await peerFingerprint(port, ["h2"]);
        assert.notEqual(denied.fingerprint, appFingerprint, "the ALLOW by principal refuses it");
        assert.ok(stats.counters["rbac.denied"] >= 1, JSON.stringify(stats.counters));

        set("STRICT");
        const strict = await sClient(port, appCaFile);
        assert.doesNotMatch(strict.out, /subject=CN ?= ?app\.example/, strict.out);
        assert.notEqual(strict.out.includes("Verify return code: 0 (ok)"), true, strict.out);
        const strictH2 = await peerFingerprint(port, ["h2"]);
        assert.notEqual(strictH2.fingerprint, appFingerprint, "STRICT: TLS goes to mutual TLS");
        assert.equal(stats.counters.downstream_cx_mtls_total, 0, "no client certificate: refused");
      } finally {
        await Deno.remove(files.dir, { recursive: true });
      }
    });
  },
});

Deno.test({
  name: "PERMISSIVE: a mesh client's Istio ALPN gets mutual TLS; on an HTTP port TLS without it too",
  async fn() {
    await withTlsApp(async ({ port, stats, set }) => {
      for (const protocol of [undefined, "TCP"]) {
        set("PERMISSIVE", protocol);
        const mesh = await peerFingerprint(port, MESH_TCP_ALPN, true);
        assert.equal(
          mesh.fingerprint,
          proxyFingerprint,
          `${protocol ?? "auto-detected"}: the proxy's certificate`,
        );
      }
      set("PERMISSIVE", "GRPC");
      const h2 = await peerFingerprint(port, MESH_H2_ALPN, true);
      assert.equal(h2.fingerprint, proxyFingerprint);
      assert.equal(h2.alpn, "h2", "HTTP/2 between proxies still selects h2");
      // A proxyless gRPC client offers h2 only and holds a mesh certificate.
      const proxyless = await peerFingerprint(port, ["h2"], true);
      assert.equal(proxyless.fingerprint, proxyFingerprint, "an HTTP2/GRPC port has no TLS passthrough");
      assert.equal(proxyless.alpn, "h2");
      set("PERMISSIVE", "HTTP");
      const http = await peerFingerprint(port, ["http/1.1"], true);
      assert.equal(http.fingerprint, proxyFingerprint, "an HTTP port has no TLS passthrough");
      // The server side of the last handshake may finish after the client's: wait for it.
      const served = async () => {
        while (stats.counters.downstream_cx_mtls_total < 5) await new Promise((r) => setTimeout(r, 20));
      };
      await within(served(), 5000, "five connections served over mutual TLS");
      assert.equal(stats.counters.downstream_cx_plaintext_total, 0);
    });
  },
});

/** Sends raw `bytes` to the listener; resolves with what came back and whether the socket closed. */
function rawExchange(
  port: number,
  bytes: Uint8Array,
  waitMs: number,
): Promise<{ got: number; closed: boolean }> {
  return new Promise((resolve) => {
    let got = 0;
    const s = net.connect({ host: "127.0.0.1", port }, () => s.write(bytes));
    s.on("data", (c: Uint8Array) => (got += c.length));
    s.on("error", () => {});
    const timer = setTimeout(() => (s.destroy(), resolve({ got, closed: false })), waitMs);
    s.once("close", () => (clearTimeout(timer), resolve({ got, closed: true })));
  });
}

Deno.test({
  name: "PERMISSIVE: damaged, oversized and stalled ClientHellos never reach the app",
  async fn() {
    await withTlsApp(async ({ port, stats, log }) => {
      // A ClientHello whose ALPN list runs past its extension: malformed, so mutual TLS refuses it.
      const ext = [0, 16, 0, 8, 0, 40, 5, ...new TextEncoder().encode("istio")];
      const body = [3, 3, ...new Array(32).fill(1), 0, 0, 2, 0x13, 1, 1, 0, 0, ext.length, ...ext];
      const hs = [1, 0, body.length >> 8, body.length & 0xff, ...body];
      const damaged = new Uint8Array([0x16, 3, 1, hs.length >> 8, hs.length & 0xff, ...hs]);
      const d = await within(rawExchange(port, damaged, 5000), 10_000, "damaged ClientHello");
      assert.equal(d.closed, true);
      // A record header announcing 65535 bytes, then more than a record's worth.
      const big = new Uint8Array(20_000).fill(0x41);
      big.set([0x16, 3, 1, 0xff, 0xff, 1]);
      const o = await within(rawExchange(port, big, 5000), 10_000, "oversized ClientHello");
      assert.equal(o.closed, true);
      // Half a record header, then nothing: the first-byte deadline (1 s here) closes it.
      const s = await within(rawExchange(port, new Uint8Array([0x16, 3, 1]), 5000), 10_000, "stalled");
      assert.equal(s.closed, true);
      assert.equal(stats.counters.downstream_cx_refused_timeout, 1);
      assert.equal(stats.counters.downstream_cx_plaintext_total, 0, "nothing was passed to the app");
      assert.equal(
        log.entries.filter((e) => e.msg === "TLS without an Istio ALPN passed to the application").length,
        0,
      );
      assert.ok(stats.counters["ssl.connection_error"] >= 2, JSON.stringify(stats.counters));
    });
  },
});
