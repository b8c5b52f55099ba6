import assert from "node:assert/strict";
import {
  CANCEL,
  ENHANCE_YOUR_CALM,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
} from "../../shared/internal/http2/frame.ts";
import { Http2Error } from "../../shared/internal/http2/limits.ts";
import { frameMessage, GRPC_STATUS, statusOfHttp, statusOfStreamError } from "./grpc_channel.ts";
import { portOf } from "./meshd_dial.ts";

Deno.test("grpc_channel: a message is framed with a zero flag and its big-endian length", () => {
  assert.deepEqual([...frameMessage(new Uint8Array([1, 2, 3]))], [0, 0, 0, 0, 3, 1, 2, 3]);
  assert.deepEqual([...frameMessage(new Uint8Array(0))], [0, 0, 0, 0, 0]);
});

Deno.test("grpc_channel: HTTP statuses and stream errors map as gRPC's PROTOCOL-HTTP2.md says; ports are read from addresses", () => {
  const table: [number, number][] = [
    [400, 13],
    [401, 16],
    [403, 7],
    [404, 12],
    [429, 14],
    [502, 14],
    [503, 14],
    [504, 14],
    [500, 2],
  ];
  for (const [http, grpc] of table) assert.equal(statusOfHttp(http), grpc, `HTTP ${http}`);
  const resets: [Http2Error, number][] = [
    [new Http2Error(CANCEL, "connection closed"), GRPC_STATUS.UNAVAILABLE], // stream 0: the connection
    [new Http2Error(REFUSED_STREAM, "GOAWAY", 3), GRPC_STATUS.UNAVAILABLE],
    [new Http2Error(CANCEL, "reset", 3), GRPC_STATUS.CANCELLED],
    [new Http2Error(ENHANCE_YOUR_CALM, "reset", 3), GRPC_STATUS.RESOURCE_EXHAUSTED],
    [new Http2Error(PROTOCOL_ERROR, "reset", 3), GRPC_STATUS.INTERNAL],
    [new Http2Error(0, "reset NO_ERROR", 3), GRPC_STATUS.INTERNAL],
  ];
  for (const [e, grpc] of resets) assert.equal(statusOfStreamError(e), grpc, e.message);
  assert.equal(portOf("10.0.0.1:15012"), 15012);
  assert.equal(portOf("[::1]:15012"), 15012);
  assert.throws(() => portOf("meshd"), /no port/);
});
