import assert from "node:assert/strict";
import {
  grpcLocalReply,
  GrpcStatus,
  grpcWebLocalReplyBytes,
  httpToGrpcStatus,
  isGrpcContentType,
  isGrpcWebContentType,
} from "./local_reply.ts";

Deno.test("httpToGrpcStatus: Envoy's table (grpc http-grpc-status-mapping.md)", () => {
  const table: [number, number][] = [
    [400, GrpcStatus.INTERNAL],
    [401, GrpcStatus.UNAUTHENTICATED],
    [403, GrpcStatus.PERMISSION_DENIED],
    [404, GrpcStatus.UNIMPLEMENTED],
    [429, GrpcStatus.UNAVAILABLE],
    [502, GrpcStatus.UNAVAILABLE],
    [503, GrpcStatus.UNAVAILABLE],
    [504, GrpcStatus.UNAVAILABLE],
    [200, GrpcStatus.UNKNOWN],
    [431, GrpcStatus.UNKNOWN],
    [500, GrpcStatus.UNKNOWN],
    [505, GrpcStatus.UNKNOWN],
  ];
  for (const [http, grpc] of table) assert.equal(httpToGrpcStatus(http), grpc, `HTTP ${http}`);
});

Deno.test("isGrpcContentType: the application/grpc family only", () => {
  const table: [string | undefined, boolean, boolean][] = [
    ["application/grpc", true, false],
    ["application/grpc+proto", true, false],
    ["application/grpc;charset=utf-8", true, false],
    ["Application/GRPC", true, false],
    ["application/grpc-web", true, true],
    ["application/grpc-web+proto", true, true],
    ["application/grpc-web-text", true, true],
    ["application/grpcx", false, false],
    ["application/json", false, false],
    ["text/plain", false, false],
    [undefined, false, false],
  ];
  for (const [ct, grpc, web] of table) {
    assert.equal(isGrpcContentType(ct), grpc, `grpc ${ct}`);
    assert.equal(isGrpcWebContentType(ct), web, `grpc-web ${ct}`);
  }
});

Deno.test("grpcLocalReply: trailers-only, status from the HTTP code or named", () => {
  assert.deepEqual(grpcLocalReply(403, "RBAC: access denied"), [
    [":status", "200"],
    ["content-type", "application/grpc"],
    ["grpc-status", "7"],
    ["grpc-message", "RBAC: access denied"],
  ]);
  assert.deepEqual(grpcLocalReply(401, "Jwt is expired")[2], ["grpc-status", "16"]);
  assert.deepEqual(grpcLocalReply(503, "no healthy upstream")[2], ["grpc-status", "14"]);
  assert.deepEqual(
    grpcLocalReply(504, "stream timeout", { grpcStatus: GrpcStatus.DEADLINE_EXCEEDED })[2],
    ["grpc-status", "4"],
  );
  // No message, no grpc-message header.
  assert.equal(grpcLocalReply(503, "").length, 3);
  assert.deepEqual(
    grpcLocalReply(403, "x", { requestContentType: "application/grpc-web-text" })[1],
    ["content-type", "application/grpc-web+proto"],
  );
});

Deno.test("grpcWebLocalReplyBytes: the trailers-only reply as an HTTP/1.1 response", () => {
  const text = new TextDecoder().decode(
    grpcWebLocalReplyBytes(401, "Jwt is expired", "application/grpc-web-text", true),
  );
  assert.equal(
    text,
    "HTTP/1.1 200 OK\r\ncontent-type: application/grpc-web+proto\r\ngrpc-status: 16\r\n" +
      "grpc-message: Jwt is expired\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
  );
});
