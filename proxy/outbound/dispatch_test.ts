import assert from "node:assert/strict";
import { type DispatchContext, dispatchOf, pathOfProtocol, serviceAt } from "./dispatch.ts";
import type { EndpointInfo, ServiceInfo } from "../runtime/snapshot.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

function endpoint(address: string, ports: Record<string, number>, proxied = true): EndpointInfo {
  return endpointInfo({ address, ports, proxied, identity: "spiffe://cluster.local/ns/a/sa/w" });
}

function service(
  name: string,
  vip: string,
  ports: [string, number, number, string][],
  endpoints: EndpointInfo[],
): ServiceInfo {
  const portSpecs = ports.map(([name, number, targetPort, protocol]) => ({
    name,
    number,
    targetPort,
    protocol,
  }));
  return serviceInfo({ name, namespace: "a", addresses: [vip], ports: portSpecs, endpoints });
}

const snapshot = {
  services: {
    "a/db": service("db", "10.96.0.10", [["tcp-db", 5432, 5432, "TCP"]], [
      endpoint("10.1.0.5", { "5432": 5432 }),
    ]),
    "a/web": service("web", "10.96.0.11", [["http", 80, 8080, "HTTP"], ["grpc", 9090, 9090, "GRPC"]], [
      endpoint("10.1.0.6", { "80": 8080, "9090": 9090 }),
    ]),
    "a/auto": service("auto", "10.96.0.12", [["web", 7000, 7000, "UNKNOWN"], ["tls", 443, 8443, "TLS"]], []),
    // IPv6, written the long way: the kernel reports fd00:10:96::14 and fd00:10:1::7.
    "a/six": service("six", "FD00:10:96:0:0::14", [["tcp", 6379, 6379, "TCP"]], [
      endpoint("fd00:10:1:0::0:7", { "6379": 6380 }),
    ]),
    // A second service on the same VIP and port: the first by key wins, in every worker.
    "b/dup": service("dup", "10.96.0.10", [["tcp", 5432, 1, "TCP"]], []),
  },
};
const ctx: DispatchContext = { listenerPort: 15001, ownAddresses: ["10.1.0.9"], policy: "ALLOW_ANY" };
const dst = (address: string, port: number) => ({ address, port, family: 4 as const });
const pathOf = (address: string, port: number, c = ctx) => dispatchOf(snapshot, dst(address, port), c).path;

Deno.test("dispatchOf: each destination's path", () => {
  const table: [string, number, string][] = [
    ["10.96.0.10", 5432, "tcp"], // VIP, TCP port
    ["10.96.0.11", 80, "http"], // VIP, HTTP port: routed by Host as before
    ["10.96.0.11", 9090, "http2"], // GRPC: the listener's HTTP entry (h2c or HTTP/1.1)
    ["10.96.0.12", 443, "tls"],
    ["10.96.0.12", 7000, "sniff"], // UNKNOWN: auto-detection
    ["10.1.0.5", 5432, "tcp"], // a pod IP and its target port
    ["10.1.0.6", 8080, "tcp"], // a pod IP on an HTTP port: carried to that endpoint, not routed by Host
    ["10.1.0.6", 9090, "tcp"], // and on a GRPC port
    ["10.96.0.10", 5433, "passthrough"], // a VIP on another port
    ["192.0.2.1", 443, "passthrough"], // outside the registry
    ["127.0.0.1", 15001, "http"], // the listener itself: never passed through (a loop)
    ["127.0.0.7", 15001, "http"],
    ["10.1.0.9", 15001, "http"], // the workload's own address at the listener's port
    ["::ffff:127.0.0.1", 15001, "http"],
    ["fd00:10:96::14", 6379, "tcp"], // an IPv6 VIP
    ["fd00:10:1::7", 6380, "tcp"], // an IPv6 pod address and its target port
    ["fd00:10:96::15", 6379, "passthrough"], // an IPv6 destination outside the registry
    ["::1", 15001, "http"], // the IPv6 listener itself
  ];
  for (const [address, port, want] of table) assert.equal(pathOf(address, port), want, `${address}:${port}`);
});

Deno.test("dispatchOf: REGISTRY_ONLY closes what is outside the registry (BlackHoleCluster), only that", () => {
  const only = { ...ctx, policy: "REGISTRY_ONLY" as const };
  assert.equal(pathOf("192.0.2.1", 443, only), "blackhole");
  assert.equal(pathOf("10.96.0.10", 5432, only), "tcp");
  assert.equal(pathOf("127.0.0.1", 15001, only), "http");
});

Deno.test("dispatchOf: no original destination is the HTTP path (routing by Host, as before capture)", () => {
  assert.deepEqual(dispatchOf(snapshot, undefined, ctx), {
    path: "http",
    why: "original destination unknown",
  });
});

Deno.test("serviceAt: VIPs before endpoint addresses, the first service by key, the cluster name", () => {
  const t = serviceAt(snapshot, "10.96.0.10", 5432)!;
  assert.equal(t.key, "a/db");
  assert.equal(t.cluster, "outbound|5432||db.a.svc.cluster.local");
  assert.equal(t.endpoint, undefined);
  const pod = serviceAt(snapshot, "10.1.0.6", 9090)!;
  assert.equal(pod.key, "a/web");
  assert.equal(pod.port.number, 9090);
  assert.equal(pod.endpoint?.address, "10.1.0.6");
  assert.equal(serviceAt(snapshot, "fd00:10:96::14", 6379)?.key, "a/six");
  assert.equal(serviceAt(snapshot, "fd00:10:1::7", 6380)?.endpoint?.address, "fd00:10:1:0::0:7");
});

Deno.test("pathOfProtocol: Istio's protocols", () => {
  const want: Record<string, string> = {
    HTTP: "http",
    HTTP_PROXY: "http",
    HTTP2: "http2",
    GRPC: "http2",
    "GRPC-WEB": "http2",
    TLS: "tls",
    HTTPS: "tls",
    UNKNOWN: "sniff",
    TCP: "tcp",
    MONGO: "tcp",
    REDIS: "tcp",
    MYSQL: "tcp",
  };
  for (const [p, path] of Object.entries(want)) assert.equal(pathOfProtocol(p), path, p);
});
