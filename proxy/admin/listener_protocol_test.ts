import assert from "node:assert/strict";
import {
  gatewayListenerProtocol,
  inboundListenerProtocol,
  inboundRoute,
  outboundListenerProtocol,
} from "./listener_protocol.ts";

const ME = { name: "tcp-echo-1", namespace: "foo" };
const SERVICES = {
  "foo/tcp-echo": {
    ports: [
      { number: 9000, targetPort: 9000, protocol: "TCP" },
      { number: 9001, targetPort: 9001, protocol: "TCP" },
      { number: 80, targetPort: 8080, protocol: "HTTP" },
      { number: 7000, targetPort: 7000, protocol: "UNKNOWN" },
    ],
    endpoints: [{
      workload: "foo/tcp-echo-1",
      ports: { "9000": 9000, "9001": 9001, "80": 8080, "7000": 7000 },
    }],
  },
  "foo/other": {
    ports: [{ number: 9000, targetPort: 9000, protocol: "GRPC" }],
    endpoints: [{ workload: "foo/other-1", ports: { "9000": 9000 } }],
  },
  "foo/a-grpc": {
    ports: [{ number: 5000, targetPort: 5000, protocol: "GRPC" }],
    endpoints: [{ workload: "foo/tcp-echo-1", ports: { "5000": 9001 } }],
  },
};

const CASES: [string, number, string, string[], string][] = [
  ["a TCP service port", 9000, "TCP", ["foo/tcp-echo port 9000 (TCP)"], "TCP"],
  ["an HTTP port by its endpoint (target) port", 8080, "HTTP", ["foo/tcp-echo port 80 (HTTP)"], "HTTP/1.1"],
  ["auto-detect", 7000, "UNKNOWN", ["foo/tcp-echo port 7000 (UNKNOWN)"], "HTTP/1.1, HTTP/2 or TCP, detected"],
  [
    "no service targets it (9002 in the authz-tcp task)",
    9002,
    "UNKNOWN",
    [],
    "HTTP/1.1, HTTP/2 or TCP, detected",
  ],
  ["two services: the first by key decides, both listed", 9001, "GRPC", [
    "foo/a-grpc port 5000 (GRPC)",
    "foo/tcp-echo port 9001 (TCP)",
  ], "HTTP/2 (or HTTP/1.1)"],
];

for (const [label, port, selected, services, carried] of CASES) {
  Deno.test(`inboundListenerProtocol: ${label}`, () => {
    assert.deepEqual(inboundListenerProtocol(ME, SERVICES, port), { selected, services, carried });
  });
}

const ROUTES: [string, string][] = [
  ["HTTP", "http1"],
  ["http", "http1"],
  ["HTTP_PROXY", "http1"],
  ["GRPC-WEB", "http1"],
  ["HTTP2", "http2"],
  ["GRPC", "http2"],
  ["UNKNOWN", "detect"],
  ["", "detect"],
  ["TCP", "tcp"],
  ["TLS", "tcp"],
  ["HTTPS", "tcp"],
  ["MONGO", "tcp"],
  ["MYSQL", "tcp"],
  ["REDIS", "tcp"],
  ["UDP", "tcp"],
];

Deno.test("inboundRoute: each protocol's data path", () => {
  for (const [protocol, route] of ROUTES) assert.equal(inboundRoute(protocol), route, protocol);
});

Deno.test("inboundListenerProtocol: auto-detect before meshd sent the workload", () => {
  assert.deepEqual(inboundListenerProtocol(undefined, SERVICES, 9000).selected, "UNKNOWN");
});

const GATEWAY_PORTS: [(string | undefined)[], string, string][] = [
  [[undefined], "HTTP", "HTTP/1.1"],
  [["SIMPLE"], "HTTPS", "HTTP/1.1"],
  [["PASSTHROUGH", "PASSTHROUGH"], "TLS", "TLS, by SNI"],
  [["PASSTHROUGH", "SIMPLE"], "HTTPS", "HTTP/1.1, or TLS by SNI"],
];

for (const [modes, selected, carried] of GATEWAY_PORTS) {
  Deno.test(`gatewayListenerProtocol: ${JSON.stringify(modes)} is ${selected}, carried ${carried}`, () => {
    assert.deepEqual(gatewayListenerProtocol(modes), { selected, services: [], carried });
  });
}

Deno.test("outboundListenerProtocol: each service port's decision, as the outbound dispatch carries it", () => {
  const services = {
    "foo/db": { ports: [{ number: 5432, targetPort: 5432, protocol: "TCP" }], endpoints: [] },
    "foo/web": {
      ports: [
        { number: 80, targetPort: 8080, protocol: "HTTP" },
        { number: 9090, targetPort: 9090, protocol: "GRPC" },
        { number: 443, targetPort: 443, protocol: "TLS" },
        { number: 7000, targetPort: 7000, protocol: "" },
      ],
      endpoints: [],
    },
  };
  assert.deepEqual(outboundListenerProtocol(services), {
    selected: "PER PORT",
    services: [
      "foo/db port 5432 (TCP) → TCP",
      "foo/web port 443 (TLS) → TLS by SNI",
      "foo/web port 7000 (UNKNOWN) → detected",
      "foo/web port 80 (HTTP) → HTTP/1.1 by Host",
      "foo/web port 9090 (GRPC) → HTTP/2 or HTTP/1.1",
    ],
    carried: "per service port, by original destination",
  });
  // VirtualService tls and tcp rules bound to mesh (meshd's mesh.tls/mesh.tcp route configurations).
  const routes = {
    "mesh.tls.443.foo/web": { tlsRoutes: [{ name: "foo/vs.tls.0" }, { name: "foo/vs.tls.1" }] },
    "mesh.tcp.5432.foo/db": { tlsRoutes: [{ name: "foo/db.tcp.0" }] },
  };
  assert.deepEqual(outboundListenerProtocol(services, routes).services.slice(0, 2), [
    "foo/db port 5432 (TCP) → TCP, VirtualService rules foo/db.tcp.0",
    "foo/web port 443 (TLS) → TLS by SNI, VirtualService rules foo/vs.tls.0, foo/vs.tls.1",
  ]);
});
