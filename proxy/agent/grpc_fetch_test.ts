import assert from "node:assert/strict";
import {
  frameMessage,
  GRPC_STATUS,
  GrpcError,
  MAX_MESSAGE_BYTES,
  MessageDeframer,
  portOf,
  statusOfHttp,
} from "./grpc_fetch.ts";

Deno.test("grpc_fetch: messages split across and joined within chunks come out whole, in order", () => {
  const a = frameMessage(new Uint8Array([1, 2, 3]));
  const b = frameMessage(new Uint8Array(0));
  const c = frameMessage(new Uint8Array(300).fill(7));
  const all = new Uint8Array([...a, ...b, ...c]);
  for (const cut of [1, 4, 5, 6, 8, 9, 100, all.length - 1]) {
    const d = new MessageDeframer();
    const out = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))];
    assert.deepEqual(out.map((m) => m.length), [3, 0, 300], `cut at ${cut}`);
    assert.equal(d.partial, false);
  }
  assert.deepEqual([...a.subarray(0, 5)], [0, 0, 0, 0, 3]);
});

Deno.test("grpc_fetch: a compressed or oversized message is refused with the gRPC status", () => {
  const compressed = frameMessage(new Uint8Array([1]));
  compressed[0] = 1;
  assert.throws(
    () => new MessageDeframer().push(compressed),
    (e) => e instanceof GrpcError && e.code === GRPC_STATUS.INTERNAL,
  );
  const big = new Uint8Array(5);
  new DataView(big.buffer).setUint32(1, MAX_MESSAGE_BYTES + 1);
  assert.throws(
    () => new MessageDeframer().push(big),
    (e) => e instanceof GrpcError && e.code === GRPC_STATUS.RESOURCE_EXHAUSTED,
  );
});

Deno.test("grpc_fetch: HTTP statuses map as gRPC's PROTOCOL-HTTP2.md says; ports are read from addresses", () => {
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
  assert.equal(portOf("10.0.0.1:15012"), 15012);
  assert.equal(portOf("[::1]:15012"), 15012);
  assert.throws(() => portOf("meshd"), /no port/);
});
