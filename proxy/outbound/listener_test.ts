/**
 * The outbound listener with real parts: a test CA, two Deno apps each behind a real InboundListener
 * in STRICT mode (so outbound→inbound mutual TLS and XFCC run end to end), a plain-text app, real
 * curl as a forward proxy client (`-x`, absolute form) and with a Host header (redirected form).
 */
import assert from "node:assert/strict";
import net from "node:net";
import { InboundListener } from "../inbound/listener.ts";
import {
  certificateInfo,
  curl,
  makeCa,
  makeLeaf,
  RawConn,
  RecordingLog,
  snapshotOf,
  TestApp,
} from "../inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import type { EndpointInfo, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { OutboundListener } from "./listener.ts";
import type { OutboundStats } from "./outbound_stats.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { ISTIO_LABELS, IstioMetrics, type IstioSeries } from "../http/istio_metrics.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";

const ca = await makeCa("Mesh Root CA");
const foreignCa = await makeCa("Foreign Root CA");
// Istio workload certificates name no address: secure naming checks the SPIFFE ID only.
const serverCert = certificateInfo(await makeLeaf(ca, { uris: [SERVER_ID] }), ca, SERVER_ID);
const clientCert = certificateInfo(await makeLeaf(ca, { uris: [CLIENT_ID] }), ca, CLIENT_ID);
const foreignServerCert = certificateInfo(
  await makeLeaf(foreignCa, { uris: [SERVER_ID] }),
  foreignCa,
  SERVER_ID,
);

function service(name: string, ports: number[], endpoints: EndpointInfo[]): ServiceInfo {
  return serviceInfo({ name, ports: ports.map((number) => ({ number })), endpoints });
}

function ep(port: number, servicePort: number, proxied: boolean, identity = SERVER_ID): EndpointInfo {
  return endpointInfo({
    workload: `w${port}`,
    ports: { [String(servicePort)]: port },
    identity: proxied ? identity : "",
  });
}

interface World {
  a: TestApp;
  b: TestApp;
  plain: TestApp;
  inA: InboundListener;
  inB: InboundListener;
  inForeign: InboundListener;
  snapshot: RuntimeSnapshot;
}

async function startWorld(): Promise<World & { stop(): Promise<void> }> {
  const a = new TestApp(), b = new TestApp(), plain = new TestApp();
  const log = new RecordingLog();
  const inbound = (app: TestApp, cert = serverCert) =>
    new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: app.port,
      snapshot: () => snapshotOf("STRICT", cert),
      log,
    });
  const inA = inbound(a), inB = inbound(b), inForeign = inbound(a, foreignServerCert);
  await Promise.all([inA.start(), inB.start(), inForeign.start()]);
  const refused = freePort();
  const base = snapshotOf("PERMISSIVE", clientCert);
  const snapshot: RuntimeSnapshot = {
    ...base,
    workload: { ...base.workload!, name: "sleep", serviceAccount: "sleep", namespace: "foo" },
    services: {
      "foo/httpbin": service("httpbin", [8000], [ep(inA.port, 8000, true), ep(inB.port, 8000, true)]),
      "foo/single": service("single", [8000], [ep(inA.port, 8000, true)]),
      "foo/plain": service("plain", [80], [ep(plain.port, 80, false)]),
      "foo/wrongid": service("wrongid", [8000], [
        ep(inA.port, 8000, true, "spiffe://cluster.local/ns/foo/sa/other"),
      ]),
      "foo/foreign": service("foreign", [8000], [ep(inForeign.port, 8000, true)]),
      "foo/notls": service("notls", [8000], [ep(plain.port, 8000, true)]),
      "foo/empty": service("empty", [8000], []),
      "foo/refused": service("refused", [8000], [ep(refused, 8000, false)]),
    },
  };
  return {
    a,
    b,
    plain,
    inA,
    inB,
    inForeign,
    snapshot,
    async stop() {
      await Promise.all([inA.close(), inB.close(), inForeign.close()]);
      await Promise.all([a.stop(), b.stop(), plain.stop()]);
    },
  };
}

const world = await startWorld();
Deno.test.afterAll(() => world.stop());

async function withOutbound(
  fn: (o: { port: number; proxy: string; stats: OutboundStats; listener: OutboundListener }) => Promise<void>,
  snapshot: () => RuntimeSnapshot = () => world.snapshot,
): Promise<void> {
  const listener = new OutboundListener({ address: "127.0.0.1", port: 0, snapshot, log: new RecordingLog() });
  await listener.start();
  try {
    await fn({
      port: listener.port,
      proxy: `http://127.0.0.1:${listener.port}`,
      stats: listener.observer as OutboundStats,
      listener,
    });
  } finally {
    await listener.close();
  }
}

/** curl arguments that fetch every URL on one connection and drop the bodies. */
function discard(urls: string[]): string[] {
  return urls.flatMap((u) => ["-o", "/dev/null", u]);
}

/** curl; returns [exit code, status, body]. */
async function get(args: string[]): Promise<[number, string, string]> {
  const r = await curl(["-w", "\n%{http_code}", ...args]);
  const i = r.stdout.lastIndexOf("\n");
  return [r.code, r.stdout.slice(i + 1), r.stdout.slice(0, i)];
}

Deno.test("absolute form (curl -x): mutual TLS to the inbound listener, XFCC with the client identity", async () => {
  await withOutbound(async ({ proxy, stats }) => {
    const [code, status, body] = await get(["-x", proxy, "http://httpbin.foo:8000/headers"]);
    assert.equal(code, 0);
    assert.equal(status, "200", body);
    const headers = JSON.parse(body).headers as Record<string, string>;
    assert.equal(headers.host, "httpbin.foo:8000");
    assert.match(
      headers["x-forwarded-client-cert"],
      new RegExp(`^By=${SERVER_ID};Hash=[0-9a-f]{64};Subject="";URI=${CLIENT_ID}$`),
    );
    assert.equal(headers["proxy-connection"], undefined);
    assert.equal(stats.counters.upstream_cx_mtls_total, 1);
  });
});

Deno.test("redirected form: routed by Host (namespace-relative, .svc and FQDN), path and query kept", async () => {
  await withOutbound(async ({ port }) => {
    for (
      const host of [
        "httpbin.foo:8000",
        "httpbin:8000",
        "httpbin.foo.svc:8000",
        "httpbin.foo.svc.cluster.local:8000",
      ]
    ) {
      const [code, status, body] = await get(["-H", `Host: ${host}`, `http://127.0.0.1:${port}/headers?x=1`]);
      assert.equal(code, 0);
      assert.equal(status, "200", `${host}: ${body}`);
      const headers = JSON.parse(body).headers as Record<string, string>;
      assert.equal(headers.host, host);
      assert.match(headers["x-forwarded-client-cert"], new RegExp(`URI=${CLIENT_ID}`));
    }
  });
});

Deno.test("plain text to an unproxied endpoint (default port 80), no XFCC; an app's XFCC is stripped", async () => {
  await withOutbound(async ({ proxy, stats }) => {
    const before = world.plain.remotePorts.length;
    const [, status, body] = await get([
      "-x",
      proxy,
      "-H",
      "x-forwarded-client-cert: By=forged",
      "http://plain.foo/headers",
    ]);
    assert.equal(status, "200", body);
    const headers = JSON.parse(body).headers as Record<string, string>;
    assert.equal(headers["x-forwarded-client-cert"], undefined);
    assert.equal(world.plain.remotePorts.length, before + 1);
    assert.equal(stats.counters.upstream_cx_plaintext_total, 1);
    assert.equal(stats.counters.upstream_cx_mtls_total, 0);
  });
});

Deno.test("round robin across two endpoints; keep-alive reuses one upstream connection per endpoint", async () => {
  await withOutbound(async ({ proxy, stats }) => {
    const a0 = world.a.remotePorts.length, b0 = world.b.remotePorts.length;
    const urls = Array.from({ length: 6 }, (_, i) => `http://httpbin.foo:8000/headers?i=${i}`);
    const r = await curl(["-x", proxy, "-w", "%{http_code} ", ...discard(urls)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "200 200 200 200 200 200");
    const aPorts = world.a.remotePorts.slice(a0), bPorts = world.b.remotePorts.slice(b0);
    assert.equal(aPorts.length, 3);
    assert.equal(bPorts.length, 3);
    // Each inbound listener reused its own application connection; the outbound made one per endpoint.
    assert.equal(stats.counters.upstream_cx_total, 2);
    assert.equal(stats.counters.downstream_cx_total, 1);
    assert.equal(stats.counters.downstream_rq_2xx, 6);
  });
});

Deno.test("keep-alive: separate client connections reuse the pooled upstream connection", async () => {
  await withOutbound(async ({ proxy, stats, listener }) => {
    for (let i = 0; i < 3; i++) {
      const [, status] = await get(["-x", proxy, "http://single.foo:8000/headers"]);
      assert.equal(status, "200");
    }
    assert.equal(stats.counters.downstream_cx_total, 3);
    assert.equal(stats.counters.upstream_cx_total, 1);
    assert.equal(listener.poolCount, 1);
  });
});

Deno.test("one client connection, requests to different services are routed per request", async () => {
  await withOutbound(async ({ proxy, stats }) => {
    const r = await curl([
      "-x",
      proxy,
      "-w",
      "%{http_code} ",
      ...discard([
        "http://single.foo:8000/headers",
        "http://plain.foo/headers",
        "http://nothing.foo/",
        "http://single.foo:8000/headers",
      ]),
    ]);
    assert.equal(r.stdout.trim(), "200 200 404 200");
    assert.equal(stats.counters.downstream_cx_total, 1);
    assert.equal(stats.counters.upstream_cx_mtls_total, 1);
    assert.equal(stats.counters.upstream_cx_plaintext_total, 1);
  });
});

Deno.test("one connection: a head split over reads, a head in one read, two pipelined heads: each routed and forwarded", async () => {
  await withOutbound(async ({ port }) => {
    const c = await RawConn.plain(port);
    const echoed = async (value: string) => {
      const r = await c.response();
      assert.equal(r.status, 200, r.body);
      const headers = JSON.parse(r.body).headers as Record<string, string>;
      assert.equal(headers["x-split"], value);
      assert.match(headers["x-forwarded-client-cert"], new RegExp(`URI=${CLIENT_ID}`));
    };
    // Split: the head is accumulated by the parser (a copy goes to the session).
    for (const piece of ["GET /headers HTTP/1.1\r\nHo", "st: httpbin.foo:8000\r\nx-split: one\r", "\n\r\n"]) {
      c.write(piece);
      await new Promise((r) => setTimeout(r, 30));
    }
    await echoed("one");
    // In one read: parsed once and handed over to the session.
    c.write("GET /headers HTTP/1.1\r\nHost: httpbin.foo:8000\r\nx-split: two\r\n\r\n");
    await echoed("two");
    // Pipelined: the second head is the rest of the first one's read.
    c.write(
      "GET /headers HTTP/1.1\r\nHost: httpbin.foo:8000\r\nx-split: three\r\n\r\n" +
        "GET /headers HTTP/1.1\r\nHost: httpbin.foo:8000\r\nx-split: four\r\n\r\n",
    );
    await echoed("three");
    await echoed("four");
    c.close();
  });
});

Deno.test("errors: 404 unknown host and port, 503 no endpoints, 502 refused / TLS / identity mismatch", async () => {
  await withOutbound(async ({ proxy, stats }) => {
    const cases: [string, string, RegExp][] = [
      ["http://nothing.foo:8000/", "404", /unknown outbound host "nothing\.foo:8000"/],
      ["http://httpbin.foo:9000/", "404", /foo\/httpbin .* has no port 9000; its ports: 8000/],
      [
        "http://empty.foo:8000/",
        "503",
        /no healthy upstream: service foo\/empty has no endpoint for port 8000/,
      ],
      [
        "http://refused.foo:8000/",
        "502",
        /upstream connect error \(connect_failure\): connect to 127\.0\.0\.1:\d+ failed/,
      ],
      [
        "http://wrongid.foo:8000/",
        "502",
        /identity_mismatch.*expected spiffe:\/\/cluster\.local\/ns\/foo\/sa\/other, server presented spiffe:\/\/cluster\.local\/ns\/foo\/sa\/httpbin/,
      ],
      [
        "http://foreign.foo:8000/",
        "502",
        /upstream connect error \(tls_failure\): TLS handshake with 127\.0\.0\.1:\d+ failed/,
      ],
      ["http://notls.foo:8000/", "502", /tls_failure/],
    ];
    for (const [url, want, body] of cases) {
      const [code, status, text] = await get(["-x", proxy, url]);
      assert.equal(code, 0, url);
      assert.equal(status, want, `${url}: ${text}`);
      assert.match(text, body, url);
    }
    assert.equal(stats.counters.no_route, 2);
    assert.equal(stats.counters.upstream_cx_none_healthy, 1);
    assert.equal(stats.counters.upstream_cx_connect_fail, 1);
    assert.equal(stats.counters["ssl.fail_verify_san"], 1);
    assert.equal(stats.counters["ssl.connection_error"], 2);
    // The proxy still serves after all that.
    const [, status] = await get(["-x", proxy, "http://single.foo:8000/headers"]);
    assert.equal(status, "200");
  });
});

Deno.test("no workload certificate yet: 503 for a proxied endpoint, plain text still works", async () => {
  const snap = { ...world.snapshot, certificate: undefined };
  await withOutbound(async ({ proxy }) => {
    const [, status, body] = await get(["-x", proxy, "http://single.foo:8000/"]);
    assert.equal(status, "503");
    assert.match(body, /no workload certificate/);
    assert.equal((await get(["-x", proxy, "http://plain.foo/headers"]))[1], "200");
  }, () => snap);
});

Deno.test("bad input: malformed head 400 and close, oversized head 431, no Host 400, TLS hello 400", async () => {
  await withOutbound(async ({ port }) => {
    const bad = await RawConn.plain(port);
    bad.write("GET / HTTP/1.1\r\nHost: httpbin.foo:8000\r\nbad header\r\n\r\n");
    assert.equal((await bad.response()).status, 400);
    assert.ok(await bad.closed());

    const big = await RawConn.plain(port);
    big.write(`GET / HTTP/1.1\r\nHost: httpbin.foo:8000\r\nx-big: ${"a".repeat(61 * 1024)}\r\n\r\n`);
    assert.equal((await big.response()).status, 431);
    assert.ok(await big.closed());

    const split = await RawConn.plain(port);
    for (let i = 0; i < 70; i++) {
      split.write(`x-h${i}: ${"b".repeat(1000)}\r\n`.replace(/^/, i === 0 ? "GET / HTTP/1.1\r\n" : ""));
    }
    assert.equal((await split.response()).status, 431);

    const noHost = await RawConn.plain(port);
    noHost.write("GET / HTTP/1.0\r\n\r\n");
    const r = await noHost.response();
    assert.equal(r.status, 400);
    assert.match(r.body, /no Host header/);

    const hello = await RawConn.plain(port);
    hello.write(new Uint8Array([0x16, 0x03, 0x01, 0x00, 0x10, 1, 2, 3]));
    assert.equal((await hello.response()).status, 400);

    const scheme = await RawConn.plain(port);
    scheme.write("GET https://httpbin.foo:8000/ HTTP/1.1\r\nHost: httpbin.foo:8000\r\n\r\n");
    assert.equal((await scheme.response()).status, 400);

    // A closed-at-once connection and garbage do not disturb the listener.
    const s = net.connect({ host: "127.0.0.1", port });
    await within(new Promise((r) => s.once("connect", r)), 5000, "a TCP connect to the outbound listener");
    s.destroy();
    const [, status] = await get(["-H", "Host: single.foo:8000", `http://127.0.0.1:${port}/headers`]);
    assert.equal(status, "200");
  });
});

Deno.test("a request body is forwarded over mutual TLS; an unknown host with a body answers 404", async () => {
  await withOutbound(async ({ proxy }) => {
    const body = "x".repeat(200_000);
    const r = await curl(
      ["-x", proxy, "--data-binary", "@-", "http://single.foo:8000/upload"],
      new TextEncoder().encode(body),
    );
    assert.equal(r.stdout, "200000");
    const [, status] = await get(["-x", proxy, "--data-binary", "hello", "http://nothing.foo/"]);
    assert.equal(status, "404");
  });
});

Deno.test("absolute form wins over Host (RFC 9112 3.2.2) and reaches the app in origin form", async () => {
  await withOutbound(async ({ port }) => {
    const c = await RawConn.plain(port);
    c.write("GET http://plain.foo/headers?q=1 HTTP/1.1\r\nHost: elsewhere.example\r\nx-a: 1\r\n\r\n");
    const r = await c.response();
    assert.equal(r.status, 200, r.body);
    assert.equal(world.plain.lastHeaders.get("host"), "plain.foo");
    assert.equal(world.plain.lastHeaders.get("x-a"), "1");
    c.write("GET http://plain.foo/headers HTTP/1.1\r\nHost: plain.foo\r\n\r\n");
    assert.equal((await c.response()).status, 200, "the client connection stays open");
    c.close();
  });
});

Deno.test("Istio standard metrics: reporter=source per service on the outbound side, destination on the inbound", async () => {
  const metrics = new IstioMetrics();
  const log = new RecordingLog();
  const inbound = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: world.a.port,
    snapshot: () => snapshotOf("STRICT", serverCert),
    log,
    requestMetrics: metrics,
  });
  await inbound.start();
  const snapshot: RuntimeSnapshot = {
    ...world.snapshot,
    services: {
      ...world.snapshot.services,
      "foo/metered": service("metered", [8000], [ep(inbound.port, 8000, true)]),
    },
  };
  const out = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => snapshot,
    log,
    requestMetrics: metrics,
  });
  await out.start();
  try {
    const proxy = `http://127.0.0.1:${out.port}`;
    const r = await curl([
      "-x",
      proxy,
      ...discard(["headers", "headers", "headers", "nope"].map((p) => `http://metered.foo:8000/${p}`)),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const [, missing] = await get(["-x", proxy, "http://nohost.foo:8000/"]);
    assert.equal(missing, "404");
    const named = (s: IstioSeries): Record<string, string | number> => ({
      ...Object.fromEntries(ISTIO_LABELS.map((k, i) => [k, s.labels[i]])),
      code: s.code,
      count: s.count,
    });
    const series = metrics.snapshot().map(named).sort((a, b) =>
      `${a.reporter}${a.code}${a.destination_service}`.localeCompare(
        `${b.reporter}${b.code}${b.destination_service}`,
      )
    );
    const source = {
      reporter: "source",
      source_workload: "sleep",
      source_workload_namespace: "foo",
      source_principal: CLIENT_ID,
      destination_workload: `w${inbound.port}`,
      destination_workload_namespace: "foo",
      destination_principal: SERVER_ID,
      destination_service: "metered.foo.svc.cluster.local",
      request_protocol: "http",
      connection_security_policy: "unknown",
    };
    const destination = {
      ...source,
      reporter: "destination",
      source_workload: "unknown",
      destination_workload: "httpbin",
      destination_service: "unknown",
      connection_security_policy: "mutual_tls",
    };
    const unrouted = {
      ...source,
      destination_workload: "unknown",
      destination_workload_namespace: "unknown",
      destination_principal: "unknown",
      destination_service: "unknown",
    };
    // The app's 404 (/nope) is counted on both sides; the proxy's own 404 (no such host) only outbound.
    assert.deepEqual(series, [
      { ...destination, code: 200, count: 3 },
      { ...destination, code: 404, count: 1 },
      { ...source, code: 200, count: 3 },
      { ...source, code: 404, count: 1 },
      { ...unrouted, code: 404, count: 1 },
    ]);
  } finally {
    await out.close();
    await inbound.close();
  }
});
