import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { adsProtocol } from "../../../shared/internal/xds/envoy_protos.ts";
import { POLICY } from "./client.ts";
import { DeltaReader } from "./delta_reader.ts";
import {
  ackLength,
  AUTHORIZATION,
  deltaRequest,
  type DeltaSummary,
  lengthAt,
  readDelta,
  resourceNames,
  TYPES,
  typeUrlOf,
  versionFinder,
  writeAck,
} from "./wire.ts";

// Envoy's protos through protobufjs (what meshd's grpc-js transport and the proxy's agent use): the
// reader is checked against an encoder that is not its own.
const service = () => adsProtocol().service.DeltaAggregatedResources;
// deno-lint-ignore no-explicit-any
const encodeResponse = (m: any): Uint8Array => new Uint8Array(service().responseSerialize(m));
// deno-lint-ignore no-explicit-any
const decodeRequest = (b: Uint8Array): any => service().requestDeserialize(Buffer.from(b));

/** The gRPC messages of a byte stream (5-byte prefixes). */
function frames(stream: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < stream.length; at += 5 + lengthAt(stream, at)) {
    out.push(stream.slice(at + 5, at + 5 + lengthAt(stream, at)));
  }
  return out;
}

function framed(bodies: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(bodies.reduce((n, b) => n + 5 + b.length, 0));
  let at = 0;
  for (const b of bodies) {
    new DataView(out.buffer).setUint32(at + 1, b.length);
    out.set(b, at + 5);
    at += 5 + b.length;
  }
  return out;
}

/** What DeltaReader reads of `stream` fed in chunks of `size`: each summary with its message. */
function readInChunks(stream: Uint8Array, size: number): [DeltaSummary, Uint8Array][] {
  const reader = new DeltaReader();
  const got: [DeltaSummary, Uint8Array][] = [];
  for (let at = 0; at < stream.length; at += size) {
    // A copy per chunk: the reader must not depend on chunks sharing one buffer.
    reader.push(stream.slice(at, at + size), (s, message) => got.push([s, message().slice()]));
  }
  return got;
}

const resource = (name: string, version: string, bodyBytes = 3) => ({
  name,
  version,
  resource: { type_url: TYPES[0], value: Buffer.alloc(bodyBytes, 7) },
});

const CASES: {
  what: string;
  // deno-lint-ignore no-explicit-any
  response: any;
  type: number;
  typeUrl: string;
  resources: number;
  policyVersion?: string;
}[] = [
  {
    what: "no resources (a removal only)",
    response: { typeUrl: TYPES[0], nonce: "1", removedResources: ["a/b"] },
    type: 0,
    typeUrl: TYPES[0],
    resources: 0,
  },
  {
    what: "three services, bodies longer than 127 bytes (two-byte lengths), a system version",
    response: {
      systemVersionInfo: "12.3",
      typeUrl: TYPES[0],
      nonce: "42",
      resources: [resource("a/x", "1", 200), resource("a/y", "1", 20_000), resource("a/z", "2")],
    },
    type: 0,
    typeUrl: TYPES[0],
    resources: 3,
  },
  {
    what: "workloads with a nonce longer than 127 bytes",
    response: { typeUrl: TYPES[1], nonce: "n".repeat(300), resources: [resource("w/1", "v")] },
    type: 1,
    typeUrl: TYPES[1],
    resources: 1,
  },
  {
    what: "authorization with the bench policy among others",
    response: {
      typeUrl: TYPES[2],
      nonce: "7",
      resources: [resource("bench/other", "9"), resource(POLICY, "v-ÿ-17"), resource(`${POLICY}-2`, "8")],
    },
    type: AUTHORIZATION,
    typeUrl: TYPES[2],
    resources: 3,
    policyVersion: "v-ÿ-17",
  },
  {
    what: "authorization without the bench policy (a name that only starts like it)",
    response: { typeUrl: TYPES[2], nonce: "8", resources: [resource(`${POLICY}x`, "1")] },
    type: AUTHORIZATION,
    typeUrl: TYPES[2],
    resources: 1,
  },
  {
    what: "a type the bench does not subscribe to",
    response: { typeUrl: "type.googleapis.com/mesh.v1.Other", nonce: "9", resources: [resource("o", "1")] },
    type: -1,
    typeUrl: "type.googleapis.com/mesh.v1.Other",
    resources: 1,
  },
  {
    what: "a type URL of the same length as a known one",
    response: { typeUrl: TYPES[0].replace("Service", "Servicf"), nonce: "1" },
    type: -1,
    typeUrl: TYPES[0].replace("Service", "Servicf"),
    resources: 0,
  },
];

for (const c of CASES) {
  Deno.test(`readDelta, versionFinder and the ACK of a protobufjs-encoded response: ${c.what}`, () => {
    const b = encodeResponse(c.response);
    const s = readDelta(b);
    assert.equal(s.type, c.type);
    assert.equal(typeUrlOf(s), c.typeUrl);
    assert.equal(new TextDecoder().decode(s.nonce), c.response.nonce);
    assert.equal(s.resources, c.resources);
    assert.equal(versionFinder(POLICY)(b), c.policyVersion);
    assert.deepEqual(
      resourceNames(b),
      (c.response.resources ?? []).map((r: { name: string; version: string }) => ({
        name: r.name,
        version: r.version,
      })),
    );
    // Two ACKs in one buffer, as the client writes the ACKs of one chunk.
    const out = new Uint8Array(2 * ackLength(s));
    assert.equal(writeAck(out, writeAck(out, 0, s), s), out.length);
    const acks = frames(out);
    assert.equal(acks.length, 2);
    for (const ack of acks) {
      const r = decodeRequest(ack);
      assert.equal(r.typeUrl, c.typeUrl);
      assert.equal(r.responseNonce, c.response.nonce);
      assert.equal(r.node, null);
    }
  });
}

Deno.test("deltaRequest decodes with Envoy's proto: node id on the first request, the nonce on an ACK", () => {
  const framed = deltaRequest({
    nodeId: "sidecar~10.0.0.1~a.bench~bench.svc.cluster.local",
    typeUrl: TYPES[1],
  });
  assert.equal(new DataView(framed.buffer).getUint32(1), framed.length - 5);
  const first = decodeRequest(framed.subarray(5));
  assert.equal(first.node.id, "sidecar~10.0.0.1~a.bench~bench.svc.cluster.local");
  assert.equal(first.typeUrl, TYPES[1]);
  const ack = decodeRequest(deltaRequest({ typeUrl: TYPES[2], nonce: "12" }).subarray(5));
  assert.equal(ack.responseNonce, "12");
  assert.equal(ack.node, null);
});

Deno.test("readDelta throws on a truncated response instead of counting what is not there", () => {
  const b = encodeResponse({ typeUrl: TYPES[0], nonce: "1", resources: [resource("a/x", "1", 300)] });
  for (const cut of [1, 3, 10, b.length - 1]) {
    assert.throws(() => readDelta(b.subarray(0, cut)), /past the end/, `cut at ${cut}`);
  }
});

Deno.test("DeltaReader reads what readDelta reads however the stream is cut, prefixes and fields across chunks included", () => {
  const bodies = [
    ...CASES.map((c) => encodeResponse(c.response)),
    new Uint8Array(0),
    encodeResponse({
      typeUrl: TYPES[0],
      nonce: "1",
      resources: [resource("a", "1", 40_000), resource("b", "2")],
    }),
  ];
  const stream = framed(bodies);
  for (const size of [1, 2, 3, 4, 5, 6, 7, 100, 16_384, stream.length]) {
    const got = readInChunks(stream, size);
    assert.equal(got.length, bodies.length, `chunks of ${size}`);
    got.forEach(([s, m], i) => {
      const want = readDelta(bodies[i]);
      assert.deepEqual(
        [s.type, s.resources, [...s.typeUrl], [...s.nonce]],
        [want.type, want.resources, [...want.typeUrl], [...want.nonce]],
        `chunks of ${size}, message ${i}`,
      );
      assert.deepEqual(m, bodies[i], `chunks of ${size}, message ${i} joined`);
    });
  }
});

Deno.test("DeltaReader throws on a response that ends inside a field, in one chunk or across several", () => {
  const whole = encodeResponse({ typeUrl: TYPES[0], nonce: "1", resources: [resource("a/x", "1", 300)] });
  for (const cut of [1, 3, 10, whole.length - 1]) {
    for (const size of [4, 1_000]) {
      assert.throws(
        () => readInChunks(framed([whole.subarray(0, cut)]), size),
        /past the end|inside a field/,
      );
    }
  }
});
