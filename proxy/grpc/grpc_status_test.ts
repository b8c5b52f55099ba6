import assert from "node:assert/strict";
import {
  grpcResponseStatus,
  grpcStatusLabel,
  INVALID_GRPC_STATUS,
  isGrpcForStats,
  NO_GRPC_STATUS,
  parseGrpcStatus,
} from "./grpc_status.ts";

Deno.test("isGrpcForStats: application/grpc and application/grpc+*, not gRPC-Web (Envoy's hasGrpcContentType)", () => {
  const cases: [string | undefined, boolean][] = [
    ["application/grpc", true],
    ["application/grpc+proto", true],
    ["application/grpc+json", true],
    ["application/grpc-web", false],
    ["application/grpc-web+proto", false],
    ["application/grpc-web-text", false],
    ["application/grpcx", false],
    ["application/json", false],
    ["", false],
    [undefined, false],
  ];
  for (const [v, want] of cases) assert.equal(isGrpcForStats(v), want, String(v));
});

Deno.test("parseGrpcStatus: as Envoy's Grpc::Common::getGrpcStatus", () => {
  const cases: [string | undefined, number | undefined][] = [
    [undefined, undefined],
    ["", undefined],
    ["0", 0],
    ["7", 7],
    ["16", 16],
    [" 14 ", 14],
    ["+3", 3],
    ["17", INVALID_GRPC_STATUS],
    ["-1", INVALID_GRPC_STATUS],
    ["OK", INVALID_GRPC_STATUS],
    ["1.5", INVALID_GRPC_STATUS],
  ];
  for (const [v, want] of cases) assert.equal(parseGrpcStatus(v), want, String(v));
});

Deno.test("grpcResponseStatus: trailers, then headers, then httpToGrpcStatus, else none", () => {
  const cases: [string | undefined, string | undefined, number, number][] = [
    ["0", undefined, 200, 0],
    ["5", "7", 200, 5], // the trailers win
    [undefined, "7", 200, 7], // trailers-only
    ["", "14", 200, 14], // an empty trailer value is absent
    [undefined, undefined, 200, 2], // a reset after the head: UNKNOWN
    [undefined, undefined, 503, 14],
    [undefined, undefined, 403, 7],
    ["99", undefined, 200, INVALID_GRPC_STATUS],
    [undefined, undefined, 0, NO_GRPC_STATUS],
  ];
  for (const [t, h, code, want] of cases) {
    assert.equal(grpcResponseStatus(t, h, code), want, `${t} ${h} ${code}`);
  }
  assert.equal(grpcStatusLabel(NO_GRPC_STATUS), "");
  assert.equal(grpcStatusLabel(INVALID_GRPC_STATUS), "-1");
  assert.equal(grpcStatusLabel(0), "0");
});
