import assert from "node:assert/strict";
import { authorizationLayer, serviceEntryPortProtocol, servicePortProtocol } from "./protocol_selection.ts";

const SERVICE_PORTS: [{ name?: string; appProtocol?: string; protocol?: string }, string][] = [
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
