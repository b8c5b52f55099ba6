import assert from "node:assert/strict";
import { servicePortProtocol } from "./service_protocol.ts";

const CASES: [{ name?: string; appProtocol?: string; protocol?: string }, string][] = [
  [{ name: "http" }, "HTTP"],
  [{ name: "http-web" }, "HTTP"],
  [{ name: "HTTP2-x" }, "HTTP2"],
  [{ name: "https" }, "HTTPS"],
  [{ name: "grpc-api" }, "GRPC"],
  [{ name: "grpc-web" }, "GRPC-WEB"],
  [{ name: "grpc-web-x" }, "GRPC-WEB"],
  [{ name: "tls-secure" }, "TLS"],
  [{ name: "mongo" }, "MONGO"],
  [{ name: "redis" }, "REDIS"],
  [{ name: "mysql" }, "MYSQL"],
  [{ name: "web" }, "TCP"],
  [{ name: "httpx" }, "TCP"],
  [{}, "TCP"],
  [{ name: "tcp", appProtocol: "http" }, "HTTP"],
  [{ name: "http", appProtocol: "kubernetes.io/h2c" }, "HTTP2"],
  [{ name: "x", appProtocol: "kubernetes.io/ws" }, "HTTP"],
  [{ name: "http", appProtocol: "unknown.example/p" }, "HTTP"],
  [{ name: "http", protocol: "UDP" }, "UDP"],
];

for (const [port, protocol] of CASES) {
  Deno.test(`servicePortProtocol: ${JSON.stringify(port)} is ${protocol}`, () => {
    assert.equal(servicePortProtocol(port), protocol);
  });
}
