import assert from "node:assert/strict";
import { ascii } from "../http/chars.ts";
import { HeadParser } from "../http/head.ts";
import { type HttpHead, REQUEST } from "../http/http_head.ts";
import type { Log } from "../http/session_types.ts";
import {
  EMPTY_SNAPSHOT,
  type EndpointInfo,
  type RuntimeSnapshot,
  type ServiceInfo,
} from "../runtime/snapshot.ts";
import { OutboundStats } from "./outbound_stats.ts";
import { OutboundRouter, type Route } from "./router.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const SILENT: Log = { debug() {}, info() {}, warn() {}, error() {} };

function service(name: string, port: number, endpoints: EndpointInfo[]): ServiceInfo {
  return serviceInfo({ name, ports: [{ number: port }], endpoints });
}

function endpoint(address: string, port: number, proxied: boolean): EndpointInfo {
  const identity = proxied ? "spiffe://cluster.local/ns/foo/sa/httpbin" : "";
  return endpointInfo({ workload: `w-${address}`, address, ports: { "8000": port }, identity });
}

/** Sidecar routing over two services: httpbin with two plain-text endpoints, and empty with none. */
const SNAPSHOT: RuntimeSnapshot = {
  ...EMPTY_SNAPSHOT,
  services: {
    "httpbin.foo.svc.cluster.local": service("httpbin", 8000, [
      endpoint("10.0.0.1", 9001, false),
      endpoint("10.0.0.2", 9002, false),
    ]),
    "empty.foo.svc.cluster.local": service("empty", 8000, []),
    "secure.foo.svc.cluster.local": service("secure", 8000, [endpoint("10.0.0.3", 9003, true)]),
  },
};

function head(text: string): HttpHead {
  const p = new HeadParser(REQUEST);
  assert.ok(p.feed(ascii(text)) >= 0, "incomplete head");
  return p.head;
}

function routed(router: OutboundRouter, text: string): Route {
  return router.route(head(text), "127.0.0.1:5000", undefined).route;
}

Deno.test("a request to a service goes to its endpoints round robin, one pool per endpoint", () => {
  const stats = new OutboundStats();
  const router = new OutboundRouter({ snapshot: () => SNAPSHOT, log: SILENT }, stats);
  const targets = [0, 1, 2].map(() => {
    const r = routed(router, "GET /a HTTP/1.1\r\nHost: httpbin.foo.svc.cluster.local:8000\r\n\r\n");
    assert.equal(r.local, false);
    return r.local ? "" : r.target;
  });
  assert.deepEqual(targets.sort(), [
    "httpbin.foo.svc.cluster.local 10.0.0.1:9001",
    "httpbin.foo.svc.cluster.local 10.0.0.1:9001",
    "httpbin.foo.svc.cluster.local 10.0.0.2:9002",
  ]);
  assert.equal(router.poolCount, 2);
  router.close();
  assert.equal(router.poolCount, 0);
});

Deno.test("the proxy answers itself, counted, when a request cannot be routed", () => {
  const stats = new OutboundStats();
  const router = new OutboundRouter({ snapshot: () => SNAPSHOT, log: SILENT }, stats);
  const cases: [string, number, string][] = [
    ["GET / HTTP/1.1\r\nHost: nowhere.foo.svc.cluster.local:8000\r\n\r\n", 404, ""],
    ["GET / HTTP/1.1\r\nHost: empty.foo.svc.cluster.local:8000\r\n\r\n", 503, "no healthy upstream"],
    ["GET / HTTP/1.1\r\nHost: secure.foo.svc.cluster.local:8000\r\n\r\n", 503, "no workload certificate"],
    [
      "GET https://httpbin.foo.svc.cluster.local:8000/ HTTP/1.1\r\nHost: x\r\n\r\n",
      400,
      "unsupported scheme",
    ],
    ["GET / HTTP/1.0\r\n\r\n", 400, "no Host header"],
  ];
  for (const [text, status, reason] of cases) {
    const r = routed(router, text);
    assert.equal(r.local, true, text);
    if (!r.local) continue;
    assert.equal(r.status, status, text);
    assert.ok(r.body.includes(reason), `${text}: ${r.body}`);
  }
  assert.equal(stats.snapshot().downstream_rq_local_reply, cases.length);
  assert.equal(router.poolCount, 0);
});

Deno.test("a routing failure becomes a 500 local reply, not an exception", () => {
  const router = new OutboundRouter({
    snapshot: () => {
      throw new Error("snapshot unavailable");
    },
    log: SILENT,
  }, new OutboundStats());
  const r = router.route(head("GET / HTTP/1.1\r\nHost: httpbin\r\n\r\n"), "peer", undefined);
  assert.deepEqual(r, {
    route: { local: true, status: 500, body: "internal error while routing the request" },
    head: null,
  });
});

Deno.test("gateway mode: no route configuration of the connection's name is a 404 naming it", () => {
  const router = new OutboundRouter(
    { snapshot: () => SNAPSHOT, log: SILENT, routeNames: ["http.80"] },
    new OutboundStats(),
  );
  const r =
    router.route(head("GET / HTTP/1.1\r\nHost: httpbin.example.com\r\n\r\n"), "peer", "http.80").route;
  assert.equal(r.local, true);
  if (r.local) {
    assert.equal(r.status, 404);
    assert.equal(r.body, "no route configuration http.80");
  }
});

const CERT = {
  certChainPem: "",
  privateKeyPem: "",
  rootsPem: "",
  spiffeId: "spiffe://cluster.local/ns/foo/sa/sleep",
  notBefore: 0,
  notAfter: 0,
};

function secureSnapshot(identity: string): RuntimeSnapshot {
  const ep = { ...endpoint("10.0.0.3", 9003, true), identity };
  return {
    ...EMPTY_SNAPSHOT,
    certificate: CERT,
    services: { "secure.foo.svc.cluster.local": service("secure", 8000, [ep]) },
  };
}

const SECURE_GET = "GET / HTTP/1.1\r\nHost: secure.foo.svc.cluster.local:8000\r\n\r\n";

Deno.test("a route kept for the requests of one snapshot is not used for the next snapshot's", () => {
  let snapshot = secureSnapshot("spiffe://cluster.local/ns/foo/sa/httpbin");
  const router = new OutboundRouter({ snapshot: () => snapshot, log: SILENT }, new OutboundStats());
  const first = routed(router, SECURE_GET);
  assert.equal(routed(router, SECURE_GET), first, "same snapshot, same endpoint: the kept route");
  assert.ok(!first.local && first.endpoint.identity === "spiffe://cluster.local/ns/foo/sa/httpbin");
  // The endpoint's identity changes: secure naming must check the new one, on a new pool.
  snapshot = secureSnapshot("spiffe://cluster.local/ns/foo/sa/other");
  const next = routed(router, SECURE_GET);
  assert.ok(!next.local && !first.local);
  assert.equal(next.endpoint.identity, "spiffe://cluster.local/ns/foo/sa/other");
  assert.equal(next.endpoint.key, "mtls|10.0.0.3:9003|spiffe://cluster.local/ns/foo/sa/other");
  assert.notEqual(next.pool, first.pool);
  // The certificate goes away: the kept route no longer applies (503, no certificate).
  snapshot = { ...snapshot, certificate: undefined };
  const none = routed(router, SECURE_GET);
  assert.ok(none.local && none.status === 503 && none.body.includes("no workload certificate"));
  router.close();
});

Deno.test("a pool that sweep() forgot is not used again by a kept route", () => {
  const router = new OutboundRouter({ snapshot: () => SNAPSHOT, log: SILENT }, new OutboundStats());
  const get = "GET / HTTP/1.1\r\nHost: httpbin.foo.svc.cluster.local:8000\r\n\r\n";
  const a = routed(router, get);
  const b = routed(router, get);
  assert.ok(!a.local && !b.local);
  router.sweep(Date.now() + 61_000);
  assert.equal(router.poolCount, 0);
  const c = routed(router, get);
  assert.ok(!c.local);
  assert.ok(c.pool !== a.pool && c.pool !== b.pool, "a forgotten pool came back");
  assert.equal(router.poolCount, 1);
  router.close();
});
