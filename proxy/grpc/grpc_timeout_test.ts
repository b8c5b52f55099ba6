import assert from "node:assert/strict";
import { formatGrpcTimeout, parseGrpcTimeout, upstreamTimeoutMs } from "./grpc_timeout.ts";

Deno.test("parseGrpcTimeout: Envoy's getGrpcTimeout (u and n rounded up; malformed is none)", () => {
  const table: [string | undefined, number | undefined][] = [
    ["1H", 3_600_000],
    ["2M", 120_000],
    ["3S", 3000],
    ["250m", 250],
    ["1500u", 2],
    ["1000u", 1],
    ["1n", 1],
    ["0m", 0],
    ["99999999m", 99_999_999],
    ["123456789m", undefined],
    ["", undefined],
    ["m", undefined],
    ["5", undefined],
    ["5s", undefined],
    ["-5S", undefined],
    ["+5S", undefined],
    [" 5S", undefined],
    ["5.5S", undefined],
    [undefined, undefined],
  ];
  for (const [value, ms] of table) assert.equal(parseGrpcTimeout(value), ms, `grpc-timeout ${value}`);
});

Deno.test("formatGrpcTimeout: Envoy's toGrpcTimeout (ms while 8 digits fit, then S, M, H, clipped)", () => {
  const table: [number, string][] = [
    [0, "0m"],
    [1000, "1000m"],
    [99_999_999, "99999999m"],
    [100_000_000, "100000S"],
    [99_999_999_000 + 1000, "1666666M"],
    [Number.MAX_SAFE_INTEGER, "99999999H"],
  ];
  for (const [ms, value] of table) assert.equal(formatGrpcTimeout(ms), value, `${ms} ms`);
  for (const ms of [1, 1000, 5000, 99_999_999]) assert.equal(parseGrpcTimeout(formatGrpcTimeout(ms)), ms);
});

Deno.test("upstreamTimeoutMs: grpc-timeout capped by the route timeout (Istio's max_grpc_timeout)", () => {
  const table: [boolean, string | undefined, number, number][] = [
    // gRPC, no route timeout (max_grpc_timeout 0): the header is the timeout.
    [true, "2S", 0, 2000],
    [true, undefined, 0, 0],
    [true, "0m", 0, 0],
    [true, "bad", 0, 0],
    // gRPC with a route timeout: the smaller; no header (or 0): the route's.
    [true, "2S", 1000, 1000],
    [true, "500m", 1000, 500],
    [true, undefined, 1000, 1000],
    [true, "0m", 1000, 1000],
    // Not gRPC: the route's timeout; grpc-timeout is not read.
    [false, "2S", 0, 0],
    [false, "2S", 1000, 1000],
    [false, undefined, 0, 0],
  ];
  for (const [grpc, header, route, want] of table) {
    assert.equal(upstreamTimeoutMs(grpc, header, route), want, `grpc=${grpc} ${header} route ${route}`);
  }
});
