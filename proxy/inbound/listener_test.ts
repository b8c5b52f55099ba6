/**
 * The inbound listener with real parts: a real CA, real curl for plain text and mutual TLS, node:tls
 * clients, and a Deno application behind the proxy. Modes, identity checks, XFCC, rotation, bad input.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type tls from "node:tls";
import type { PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import {
  CertFiles,
  certificateInfo,
  curl,
  declaredHttp,
  makeCa,
  makeLeaf,
  RawConn,
  RecordingLog,
  snapshotOf,
  TestApp,
  withPortProtocol,
} from "./test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/bar/sa/sleep";

const ca = await makeCa("Mesh Root CA");
const foreignCa = await makeCa("Foreign Root CA");
const serverLeaf = await makeLeaf(ca, { uris: [SERVER_ID], ips: ["127.0.0.1"] });
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
const namedClientLeaf = await makeLeaf(ca, {
  uris: [CLIENT_ID],
  dnsNames: ["sleep.bar.svc"],
  subject: "CN=sleep, O=acme, C=DE",
});
const foreignLeaf = await makeLeaf(foreignCa, { uris: [CLIENT_ID] });
const otherDomainLeaf = await makeLeaf(ca, { uris: ["spiffe://evil.example/ns/bar/sa/sleep"] });
const noSpiffeLeaf = await makeLeaf(ca, { dnsNames: ["client.example"] });
const serverCert = certificateInfo(serverLeaf, ca, SERVER_ID);

const files = await CertFiles.create();
Deno.test.afterAll(() => files.remove());
const roots = ["--cacert", await files.write("roots.pem", ca.pem)];
const client = [...roots, ...await files.client("client", clientLeaf)];
const namedClient = [...roots, ...await files.client("named", namedClientLeaf)];
const foreignClient = [...roots, ...await files.client("foreign", foreignLeaf)];
const otherDomainClient = [...roots, ...await files.client("other", otherDomainLeaf)];
const noSpiffeClient = [...roots, ...await files.client("nospiffe", noSpiffeLeaf)];

function sha256(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("hex");
}

/** A listener in front of a fresh TestApp; `snapshot` is mutable through `set`. */
async function withProxy(
  initial: (appPort: number) => RuntimeSnapshot,
  fn: (ctx: {
    port: number;
    app: TestApp;
    listener: InboundListener;
    stats: InboundStats;
    log: RecordingLog;
    set: (s: RuntimeSnapshot) => void;
    url: (path: string, scheme?: "http" | "https") => string;
  }) => Promise<void>,
  opts: { appPort?: number; idleTimeoutMs?: number; handshakeTimeoutMs?: number } = {},
): Promise<void> {
  const app = new TestApp();
  const port = opts.appPort ?? app.port;
  let snapshot = initial(port);
  const http = declaredHttp(port);
  const log = new RecordingLog();
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: port,
    snapshot: () => http(snapshot),
    log,
    connectionLimits: { idleTimeoutMs: opts.idleTimeoutMs },
    handshakeTimeoutMs: opts.handshakeTimeoutMs,
  });
  await listener.start();
  try {
    await fn({
      port: listener.port,
      app,
      listener,
      stats: listener.observer as InboundStats,
      log,
      set: (s) => (snapshot = s),
      url: (path, scheme = "https") => `${scheme}://127.0.0.1:${listener.port}${path}`,
    });
  } finally {
    await listener.close();
    app.gate.resolve();
    await app.stop();
  }
}

const mode = (m: PortMtls["mode"], ports: { port: number; mode: PortMtls["mode"] }[] = []) => () =>
  snapshotOf(m, serverCert, ports);

/** curl -o /dev/null -w %{http_code}: returns [exit code, status text]. */
async function status(args: string[]): Promise<[number, string]> {
  const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", ...args]);
  return [r.code, r.stdout];
}

Deno.test("STRICT: mutual TLS accepted, plain text reset (curl 000, exit 56), bad certificates refused", async () => {
  await withProxy(mode("STRICT"), async ({ url, stats, log }) => {
    assert.deepEqual(await status([...client, url("/headers")]), [0, "200"]);
    assert.deepEqual(await status([url("/headers", "http")]), [56, "000"], "plain text gets a TCP reset");
    const [foreignCode, foreignStatus] = await status([...foreignClient, url("/headers")]);
    assert.notEqual(foreignCode, 0, "a certificate of another CA is refused");
    assert.equal(foreignStatus, "000");
    const [noCertCode] = await status([...roots, url("/headers")]);
    assert.notEqual(noCertCode, 0, "no client certificate is refused");
    const [otherCode] = await status([...otherDomainClient, url("/headers")]);
    assert.notEqual(otherCode, 0, "a SPIFFE ID of another trust domain is refused");
    const [noIdCode] = await status([...noSpiffeClient, url("/headers")]);
    assert.notEqual(noIdCode, 0, "a certificate without SPIFFE ID is refused");

    const c = stats.counters;
    assert.equal(c.downstream_cx_refused_plaintext_in_strict, 1);
    assert.equal(c.downstream_cx_mtls_total, 1);
    assert.equal(c.downstream_rq_total, 1);
    assert.equal(c["ssl.fail_verify_san"], 2);
    assert.ok(c["ssl.connection_error"] >= 2, JSON.stringify(c));

    // Failed handshakes are logged with the peer address and the reason.
    const failures = log.entries.filter((e) => e.msg === "TLS handshake failed");
    assert.ok(failures.length >= 2);
    for (const f of failures) {
      assert.match(String(f.fields?.peer), /^127\.0\.0\.1:\d+$/);
      assert.ok(String(f.fields?.reason).length > 0);
    }
    assert.ok(
      failures.some((f) => /UNABLE_TO_VERIFY|certificate/i.test(String(f.fields?.reason))),
      JSON.stringify(failures),
    );
    assert.ok(
      failures.some((f) => /no certificate|did not return a certificate/i.test(String(f.fields?.reason))),
      JSON.stringify(failures),
    );
    const refused = log.entries.filter((e) => e.msg === "TLS connection refused").map((e) =>
      String(e.fields?.reason)
    );
    assert.ok(
      refused.some((r) => r.includes("evil.example") && r.includes("cluster.local")),
      JSON.stringify(refused),
    );
    assert.ok(refused.some((r) => r.includes("no SPIFFE ID")), JSON.stringify(refused));
  });
});

Deno.test("PERMISSIVE: plain text and mutual TLS on the same port", async () => {
  await withProxy(mode("PERMISSIVE"), async ({ url, stats }) => {
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    assert.deepEqual(await status([...client, url("/headers")]), [0, "200"]);
    assert.equal(stats.counters.downstream_cx_plaintext_total, 1);
    assert.equal(stats.counters.downstream_cx_mtls_total, 1);
  });
});

Deno.test("DISABLE: plain text only", async () => {
  await withProxy(mode("DISABLE"), async ({ url }) => {
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    const [code] = await status([...client, url("/headers")]);
    assert.notEqual(code, 0, "a TLS client on a DISABLE port fails");
  });
});

Deno.test("no workload certificate yet: TLS refused, plain text served under PERMISSIVE", async () => {
  await withProxy(() => snapshotOf("PERMISSIVE", undefined), async ({ url, stats }) => {
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    const [code] = await status([...client, url("/headers")]);
    assert.notEqual(code, 0);
    assert.equal(stats.counters.downstream_cx_refused_no_certificate, 1);
  });
});

Deno.test("portLevelMtls overrides the workload mode for its port", async () => {
  await withProxy(
    (p) => snapshotOf("STRICT", serverCert, [{ port: p, mode: "PERMISSIVE" }]),
    async ({ url }) => {
      assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    },
  );
  await withProxy(
    (p) =>
      snapshotOf("PERMISSIVE", serverCert, [{ port: p + 1, mode: "DISABLE" }, { port: p, mode: "STRICT" }]),
    async ({ url }) => {
      assert.deepEqual(await status([url("/headers", "http")]), [56, "000"]);
      assert.deepEqual(await status([...client, url("/headers")]), [0, "200"]);
    },
  );
});

Deno.test("a mode change in the snapshot applies to the next connection", async () => {
  await withProxy(mode("PERMISSIVE"), async ({ port, url, set }) => {
    const held = await RawConn.plain(port);
    held.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await held.response()).status, 200);

    set(snapshotOf("STRICT", serverCert, [], 2));
    assert.deepEqual(await status([url("/headers", "http")]), [56, "000"]);
    assert.deepEqual(await status([...client, url("/headers")]), [0, "200"]);
    // The connection accepted under PERMISSIVE keeps working (the policy applies to new connections).
    held.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await held.response()).status, 200);
    held.close();

    set(snapshotOf("DISABLE", serverCert, [], 3));
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    assert.notEqual((await status([...client, url("/headers")]))[0], 0);

    set(snapshotOf("PERMISSIVE", serverCert, [], 4));
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    assert.deepEqual(await status([...client, url("/headers")]), [0, "200"]);
  });
});

Deno.test("X-Forwarded-Client-Cert: set over mutual TLS, appended to a received one, stripped without", async () => {
  await withProxy(mode("PERMISSIVE"), async ({ url }) => {
    const expected = `By=${SERVER_ID};Hash=${sha256(clientLeaf.der)};Subject="";URI=${CLIENT_ID}`;
    const get = async (args: string[]) => {
      const r = await curl([...args]);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout).headers["x-forwarded-client-cert"] as string | undefined;
    };
    assert.equal(await get([...client, url("/headers")]), expected);
    assert.equal(
      await get([
        ...client,
        "-H",
        "X-Forwarded-Client-Cert: By=spiffe://cluster.local/ns/gw/sa/ingress;Hash=00",
        url("/headers"),
      ]),
      `By=spiffe://cluster.local/ns/gw/sa/ingress;Hash=00,${expected}`,
    );
    assert.equal(
      await get([
        "-H",
        "X-Forwarded-Client-Cert: By=forged;URI=spiffe://cluster.local/ns/x/sa/admin",
        url("/headers", "http"),
      ]),
      undefined,
    );
    assert.equal(await get([url("/headers", "http")]), undefined);
    // Subject in RFC 2253 order (last RDN first) and DNS SANs, as Envoy with Istio's settings.
    assert.equal(
      await get([...namedClient, url("/headers")]),
      `By=${SERVER_ID};Hash=${
        sha256(namedClientLeaf.der)
      };Subject="C=DE,O=acme,CN=sleep";URI=${CLIENT_ID};DNS=sleep.bar.svc`,
    );
  });
});

Deno.test("certificate rotation: new connections get the new certificate, open ones are kept", async () => {
  await withProxy(mode("STRICT"), async ({ port, set, listener }) => {
    const tlsOpts = { ca: ca.pem, cert: clientLeaf.certPem, key: clientLeaf.keyPem };
    const held = await RawConn.tls(port, tlsOpts);
    const before = (held.socket as tls.TLSSocket).getPeerCertificate().fingerprint256;
    held.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    const first = await held.response();
    assert.equal(first.status, 200);

    const rotatedLeaf = await makeLeaf(ca, { uris: [SERVER_ID], ips: ["127.0.0.1"] });
    set(snapshotOf("STRICT", certificateInfo(rotatedLeaf, ca, SERVER_ID), [], 2));
    const fresh = await RawConn.tls(port, tlsOpts);
    const after = (fresh.socket as tls.TLSSocket).getPeerCertificate().fingerprint256;
    assert.notEqual(after, before, "a new connection sees the rotated certificate");
    fresh.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await fresh.response()).status, 200);
    fresh.close();

    // The connection opened before the rotation is still open and still served.
    held.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    const second = await held.response();
    assert.equal(second.status, 200);
    assert.equal(held.ended, false);
    assert.equal(
      JSON.parse(second.body).headers["x-forwarded-client-cert"],
      JSON.parse(first.body).headers["x-forwarded-client-cert"],
    );
    held.close();
    assert.equal(listener.tlsBuilds, 2);
  });
});

Deno.test("bad input: 400 and close, 431, 501, 505; the proxy keeps serving", async () => {
  // An HTTP port: on an auto-detect port what is not an HTTP/1.x request line is carried as TCP.
  await withProxy((p) => withPortProtocol(mode("PERMISSIVE")(), p, "HTTP"), async ({ port, url, stats }) => {
    const cases: [string, number][] = [
      ["GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n", 400],
      ["GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n", 400],
      ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", 400],
      ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400],
      ["POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400],
      ["GET / HTTP/1.1\r\n\r\n", 400],
      ["GET / HTTP/1.1\nHost: a\n\n", 400],
      ["\x00\x01\x02garbage\r\n\r\n", 400],
      ["POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501],
      ["CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501],
      ["GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505],
      [`GET / HTTP/1.1\r\nHost: a\r\nX: ${"y".repeat(70 * 1024)}\r\n\r\n`, 431],
      ["GET / HTTP/1.1\r\nHost: a\r\n" + "X: y\r\n".repeat(101) + "\r\n", 431],
    ];
    for (const [text, code] of cases) {
      const c = await RawConn.plain(port);
      c.write(text);
      const r = await c.response();
      assert.equal(r.status, code, JSON.stringify(text.slice(0, 60)));
      assert.equal(r.headers.connection, "close");
      assert.ok(await c.closed(), "the connection is closed after the error");
      c.close();
    }
    // A 431 through real curl too.
    assert.deepEqual(await status(["-H", `X-Big: ${"a".repeat(70000)}`, url("/headers", "http")]), [
      0,
      "431",
    ]);
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
    assert.ok(stats.counters.downstream_rq_4xx >= 11);
  });
});

Deno.test("bad input: random garbage and mutated requests never crash the proxy", async () => {
  await withProxy(mode("PERMISSIVE"), async ({ port, url }) => {
    const valid =
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let i = 0; i < 150; i++) {
      let bytes: Uint8Array;
      if (i % 3 === 0) {
        bytes = new Uint8Array(1 + rand(300)).map(() => rand(256));
      } else {
        bytes = new TextEncoder().encode(valid);
        for (let k = 0; k < 1 + rand(4); k++) bytes[rand(bytes.length)] = rand(256);
      }
      const c = await RawConn.plain(port);
      c.write(bytes);
      c.socket.end();
      await c.closed(3000);
      c.close();
    }
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
  });
});

Deno.test("the application is down: 503", async () => {
  const deadPort = freePort();
  await withProxy(mode("PERMISSIVE"), async ({ url, stats }) => {
    const r = await curl(["-w", "\n%{http_code}", url("/headers", "http")]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /connection failure\n503$/);
    assert.equal(stats.counters.upstream_cx_connect_fail, 1);
  }, { appPort: deadPort });
});

Deno.test("connections are released: closed before sending, silent, idle keep-alive", async () => {
  await withProxy(mode("PERMISSIVE"), async ({ port, listener, stats }) => {
    const probe = await RawConn.plain(port);
    probe.socket.end();
    assert.ok(await probe.closed(), "a connection closed before its first byte is closed at once");
    probe.close();

    const silent = await RawConn.plain(port);
    const idle = await RawConn.plain(port);
    idle.write("GET /headers HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await idle.response()).status, 200);
    const handshaking = await RawConn.plain(port);
    handshaking.write(new Uint8Array([0x16, 0x03, 0x01])); // a TLS record that never completes
    const [s, i, h] = await Promise.all([silent.closed(5000), idle.closed(5000), handshaking.closed(5000)]);
    assert.deepEqual([s, i, h], [true, true, true]);
    for (const c of [silent, idle, handshaking]) c.close();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(listener.connectionCount, 0);
    assert.equal(stats.counters.downstream_cx_refused_timeout, 2);
  }, { idleTimeoutMs: 1000, handshakeTimeoutMs: 1000 });
});

Deno.test("a failing snapshot provider closes the connection and leaves the proxy running", async () => {
  let fail = true;
  await withProxy(() => {
    const good = snapshotOf("PERMISSIVE", serverCert);
    return new Proxy(good, {
      get(target, key) {
        if (fail && key === "workload") throw new Error("snapshot unavailable");
        return Reflect.get(target, key);
      },
    });
  }, async ({ url, log }) => {
    const [code] = await status([url("/headers", "http")]);
    assert.notEqual(code, 0);
    assert.ok(
      log.entries.some((e) =>
        e.level === "error" && String(e.fields?.error).includes("snapshot unavailable")
      ),
    );
    fail = false;
    assert.deepEqual(await status([url("/headers", "http")]), [0, "200"]);
  });
});
