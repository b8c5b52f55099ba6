import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  encodeDeltaParts,
  encodeDeltaResponse,
  encodeSotwParts,
  NoncedBytes,
  resourceEntry,
  withNonce,
} from "./delta_wire.ts";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";

const T = "type.googleapis.com/mesh.v1.Service";
// deno-lint-ignore no-explicit-any
const decode = (bytes: Uint8Array): any =>
  adsProtocol().service.DeltaAggregatedResources.responseDeserialize(Buffer.from(bytes));

Deno.test("the hand-written DeltaDiscoveryResponse decodes with Envoy's proto, field for field", () => {
  const body = new Uint8Array(300).map((_, i) => i % 256);
  const r = { name: "foo/httpbin", version: "v-ÿ-1", body };
  const bytes = encodeDeltaResponse({
    systemVersionInfo: "12.3",
    typeUrl: T,
    entries: [resourceEntry(T, r), resourceEntry(T, { name: "b", version: "2", body: new Uint8Array() })],
    removed: ["gone", "also-gone"],
    nonce: "42",
  });
  const m = decode(bytes);
  assert.equal(m.systemVersionInfo, "12.3");
  assert.equal(m.typeUrl, T);
  assert.equal(m.nonce, "42");
  assert.deepEqual(m.removedResources, ["gone", "also-gone"]);
  assert.equal(m.resources.length, 2);
  assert.equal(m.resources[0].name, "foo/httpbin");
  assert.equal(m.resources[0].version, "v-ÿ-1");
  assert.equal(m.resources[0].resource.type_url, T);
  assert.deepEqual(new Uint8Array(m.resources[0].resource.value), body);
  assert.equal(m.resources[1].name, "b");
});

Deno.test("entries are encoded once per resource object and type", () => {
  const r = { name: "a", version: "1", body: new Uint8Array([1]) };
  assert.equal(resourceEntry(T, r), resourceEntry(T, r));
  assert.notEqual(resourceEntry(T, r), resourceEntry(T + "2", r));
});

Deno.test("an empty response is valid", () => {
  const m = decode(
    encodeDeltaResponse({ systemVersionInfo: "", typeUrl: T, entries: [], removed: [], nonce: "1" }),
  );
  assert.deepEqual(m.resources, []);
  assert.equal(m.nonce, "1");
});

Deno.test("delta and state-of-the-world responses are byte for byte what protobufjs writes for the same message", () => {
  const rs = [
    { name: "foo/a", version: "1", body: new Uint8Array(200).fill(7) },
    { name: "b", version: "2", body: new Uint8Array() },
  ];
  const service = adsProtocol().service;
  const delta = encodeDeltaResponse({
    systemVersionInfo: "3.1",
    typeUrl: T,
    entries: rs.map((r) => resourceEntry(T, r)),
    removed: ["gone"],
    nonce: "9",
  });
  assert.deepEqual(
    new Uint8Array(service.DeltaAggregatedResources.responseSerialize(decode(delta))),
    delta,
  );
  const sotw = withNonce(encodeSotwParts({ versionInfo: "3.1", typeUrl: T, resources: rs }), "9");
  const fromProtobufjs = service.StreamAggregatedResources.responseSerialize({
    versionInfo: "3.1",
    typeUrl: T,
    resources: rs.map((r) => ({ type_url: T, value: r.body })),
    nonce: "9",
  });
  assert.deepEqual(sotw, new Uint8Array(fromProtobufjs));
});

Deno.test("NoncedBytes: its chunks in a row (nonce field first) decode as the joined bytes do", () => {
  const r = { name: "foo/httpbin", version: "1", body: new Uint8Array([1, 2, 3]) };
  const parts = encodeDeltaParts({
    systemVersionInfo: "7",
    typeUrl: T,
    entries: [resourceEntry(T, r)],
    removed: ["x"],
  });
  const n = new NoncedBytes(parts, "12");
  assert.deepEqual(n.join(), withNonce(parts, "12"));
  const gathered = Buffer.concat(n.chunks.map((c) => Buffer.from(c)));
  assert.equal(gathered.length, n.length);
  assert.equal(n.chunks[1], parts.head, "the shared part is the same buffer, not a copy");
  assert.deepEqual(decode(gathered), decode(n.join()));
  assert.equal(decode(gathered).nonce, "12");
});

Deno.test("NoncedBytes: the nonce field after room for a prefix, ASCII and not, decodes as protobufjs encodes", () => {
  const r = { name: "foo/httpbin", version: "1", body: new Uint8Array(200).fill(7) };
  const parts = encodeDeltaParts({
    systemVersionInfo: "7",
    typeUrl: T,
    entries: [resourceEntry(T, r)],
    removed: [],
  });
  // A 200-character nonce needs a two-octet length varint.
  for (const nonce of ["1", "12345678901", "é-ñ", "x".repeat(200), ""]) {
    const n = new NoncedBytes(parts, nonce);
    const head = n.nonceField(5);
    assert.deepEqual(
      [...head.subarray(0, 5)],
      [0, 0, 0, 0, 0],
      "the reserved octets are left for the caller",
    );
    const gathered = Buffer.concat([head.subarray(5), ...n.shared].map((c) => Buffer.from(c)));
    assert.equal(gathered.length, n.length, nonce);
    assert.deepEqual(decode(gathered), decode(n.join()), nonce);
    assert.equal(decode(gathered).nonce, nonce);
    assert.equal(n.shared[0], parts.head, "the shared part is the same buffer, not a copy");
  }
});

Deno.test("names, versions and removals, ASCII or not, short or long, are the octets protobufjs writes", () => {
  const service = adsProtocol().service;
  const long = "n".repeat(300);
  for (const s of ["a", "é-ñ", "\u{1F600}", "\ud800-lone", long, long + "ü", ""]) {
    const r = { name: `ns/${s}`, version: `v${s}`, body: new Uint8Array([1, 2]) };
    const delta = encodeDeltaResponse({
      systemVersionInfo: s,
      typeUrl: T,
      entries: [resourceEntry(T, r)],
      removed: [s, `gone-${s}`],
      nonce: "3",
    });
    const m = decode(delta);
    assert.equal(m.resources[0].name, `ns/${s}`.replace("\ud800", "\ufffd"));
    assert.deepEqual(new Uint8Array(service.DeltaAggregatedResources.responseSerialize(m)), delta, s);
  }
});
