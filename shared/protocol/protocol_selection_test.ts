import assert from "node:assert/strict";
import { authorizationLayer, serviceEntryPortProtocol, servicePortProtocol } from "./protocol_selection.ts";

const SERVICE_PORTS: [{ name?: string; appProtocol?: string; protocol?: string; port?: number }, string][] = [
  [{ name: "http" }, "HTTP"],
  [{ name: "http-web" }, "HTTP"],
  [{ name: "HTTP2-x" }, "HTTP2"],
  [{ name: "https" }, "HTTPS"],
  [{ name: "grpc-api" }, "GRPC"],
  [{ name: "grpc-web" }, "GRPC-WEB"],
  [{ name: "grpc-web-x" }, "GRPC-WEB"],
  [{ name: "grpcweb" }, "UNKNOWN"],
  [{ name: "tcp-echo" }, "TCP"],
  [{ name: "tls-secure" }, "TLS"],
  [{ name: "mongo" }, "MONGO"],
  [{ name: "redis" }, "REDIS"],
  [{ name: "mysql" }, "MYSQL"],
  [{ name: "udp-dns" }, "UDP"],
  [{ name: "web" }, "UNKNOWN"],
  [{ name: "httpx" }, "UNKNOWN"],
  [{}, "UNKNOWN"],
  [{ name: "tcp", appProtocol: "http" }, "HTTP"],
  [{ name: "http", appProtocol: "tcp" }, "TCP"],
  [{ name: "db", appProtocol: "mysql" }, "MYSQL"],
  [{ name: "x", appProtocol: "grpc-web" }, "GRPC-WEB"],
  [{ name: "http", appProtocol: "kubernetes.io/h2c" }, "HTTP2"],
  [{ name: "x", appProtocol: "kubernetes.io/ws" }, "HTTP"],
  [{ name: "x", appProtocol: "kubernetes.io/wss" }, "HTTPS"],
  [{ name: "http", appProtocol: "unknown.example/p" }, "UNKNOWN"],
  [{ name: "http", appProtocol: "" }, "HTTP"],
  [{ name: "http", protocol: "UDP" }, "UDP"],
  [{ name: "http", protocol: "SCTP" }, "HTTP"],
  // Istio's server-first ports: TCP unless a protocol is named.
  [{ port: 25 }, "TCP"],
  [{ name: "dns", port: 53 }, "TCP"],
  [{ name: "db", port: 3306 }, "TCP"],
  [{ name: "web", port: 27017 }, "TCP"],
  [{ name: "x", appProtocol: "unknown.example/p", port: 3306 }, "TCP"],
  [{ name: "http", port: 3306 }, "HTTP"],
  [{ name: "mysql", port: 3306 }, "MYSQL"],
  [{ name: "dns", port: 53, protocol: "UDP" }, "UDP"],
  [{ name: "db", port: 3307 }, "UNKNOWN"],
];

for (const [port, protocol] of SERVICE_PORTS) {
  Deno.test(`servicePortProtocol: ${JSON.stringify(port)} is ${protocol}`, () => {
    assert.equal(servicePortProtocol(port), protocol);
  });
}

const ENTRY_PORTS: [{ protocol?: string; name?: string }, string][] = [
  [{ protocol: "HTTP" }, "HTTP"],
  [{ protocol: "grpc" }, "GRPC"],
  [{ protocol: "GRPC-WEB" }, "GRPC-WEB"],
  [{ protocol: "TCP", name: "http" }, "TCP"],
  [{ protocol: "TLS" }, "TLS"],
  [{ protocol: "Mongo" }, "MONGO"],
  [{ name: "http" }, "UNKNOWN"],
  [{ protocol: "HTTP_PROXY" }, "HTTP_PROXY"],
  [{ protocol: "SMTP" }, "UNKNOWN"],
  // A ServiceEntry port is not a Kubernetes port: no server-first default (Istio's convertPort).
  [{ protocol: "", port: 3306 } as { protocol?: string }, "UNKNOWN"],
  [{}, "UNKNOWN"],
];

for (const [port, protocol] of ENTRY_PORTS) {
  Deno.test(`serviceEntryPortProtocol: ${JSON.stringify(port)} is ${protocol}`, () => {
    assert.equal(serviceEntryPortProtocol(port), protocol);
  });
}

const LAYERS: [string, string][] = [
  ["HTTP", "http"],
  ["http2", "http"],
  ["GRPC", "http"],
  ["GRPC-WEB", "http"],
  ["TCP", "tcp"],
  ["TLS", "tcp"],
  ["HTTPS", "tcp"],
  ["MONGO", "tcp"],
  ["REDIS", "tcp"],
  ["MYSQL", "tcp"],
  ["UNKNOWN", "auto"],
  ["", "auto"],
];

for (const [protocol, layer] of LAYERS) {
  Deno.test(`authorizationLayer: ${protocol || "(none)"} is ${layer}`, () => {
    assert.equal(authorizationLayer(protocol), layer);
  });
}
