import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";
import type { GeneratedList, GeneratedResource } from "./ads_types.ts";
import { CHUNK_BYTES, CODEC_CHUNK_BYTES, deltaUpdate } from "./delta_diff.ts";
import { listIndex, newTypeState, type TypeState } from "./type_state.ts";

const T = "type.googleapis.com/mesh.v1.Service";

function resource(name: string, version: string, size = 10): GeneratedResource {
  return { name, version, body: new Uint8Array(size).fill(version.charCodeAt(0)) };
}

function list(...resources: GeneratedResource[]): GeneratedList {
  return { resources, version: resources.map((r) => `${r.name}@${r.version}`).join(",") };
}

function wildcard(): TypeState {
  const st = newTypeState(T);
  st.wildcard = true;
  return st;
}

/** The bytes a stream would write for an update, with fixed nonces. */
const bytesOf = (st: TypeState, l: GeneratedList, answer = false) =>
  deltaUpdate(st, l, "v1", answer).map((r, i) => r.encode(String(i)));

Deno.test("streams that hold the same list share one diff, and its bytes equal a stream's own diff", () => {
  const a = resource("a", "1");
  const before = list(a, resource("b", "1"), resource("gone", "1"));
  const after = list(a, resource("b", "2"), resource("new", "1"));
  const [s1, s2] = [wildcard(), wildcard()];
  deltaUpdate(s1, before, "v0", true);
  deltaUpdate(s2, before, "v0", true);
  assert.equal(s1.sent, s2.sent, "both hold the list's shared index");
  const shared1 = deltaUpdate(s1, after, "v1", false);
  const shared2 = deltaUpdate(s2, after, "v1", false);
  assert.equal(shared1, shared2, "one diff for both");
  // A stream holding the same names and versions in a map of its own (after a NACK, say) diffs alone.
  const own = wildcard();
  own.sent = new Map(listIndex(before));
  assert.deepEqual(bytesOf(own, after), shared1.map((r, i) => r.encode(String(i))));
  assert.equal(shared1.length, 1);
  assert.equal(shared1[0].count, 2, "b and new; a is unchanged");
});

Deno.test("a first sync is cut into chunks of about CHUNK_BYTES; only the last carries removals", () => {
  const big = list(...Array.from({ length: 5 }, (_, i) => resource(`r${i}`, "1", CHUNK_BYTES / 2)));
  const st = wildcard();
  const first = deltaUpdate(st, big, "v1", true);
  assert.deepEqual(first.map((r) => [r.count, r.last]), [[2, false], [2, false], [1, true]]);
  assert.equal(deltaUpdate(st, big, "v1", false).length, 0, "nothing new: nothing to send");
});

Deno.test("the chunk size is the caller's, and streams of another size do not share a diff cut for one", () => {
  const big = list(...Array.from({ length: 8 }, (_, i) => resource(`r${i}`, "1", CHUNK_BYTES / 2)));
  const small = deltaUpdate(wildcard(), big, "v1", true);
  const large = deltaUpdate(wildcard(), big, "v1", true, CODEC_CHUNK_BYTES);
  assert.equal(small.length, 4, "8 KiB: two resources per response");
  assert.deepEqual(
    large.map((r) => [r.count, r.last]),
    [[8, true]],
    "the codec's size: the 8 resources in one",
  );
  assert.deepEqual(deltaUpdate(wildcard(), big, "v1", true).map((r) => r.count), [2, 2, 2, 2]);
  // Each response's bytes decode to the same resources whatever the cut.
  const names = (rs: typeof small) =>
    rs.flatMap((r) =>
      adsProtocol().service.DeltaAggregatedResources.responseDeserialize(Buffer.from(r.encode("1").join()))
        .resources.map((x: { name: string }) => x.name)
    );
  assert.deepEqual(names(large), names(small));
});

Deno.test("a subscription by name gets only its names; a missing one answered as removed", () => {
  const st = newTypeState(T);
  st.names = new Set(["a", "missing"]);
  const [r] = deltaUpdate(st, list(resource("a", "1"), resource("b", "1")), "v1", true);
  assert.equal(r.count, 1);
  assert.deepEqual([...st.sent.keys()], ["a"]);
  const m = adsProtocol().service.DeltaAggregatedResources.responseDeserialize(
    Buffer.from(r.encode("7").join()),
  );
  assert.deepEqual(m.resources.map((x: { name: string }) => x.name), ["a"]);
  assert.deepEqual(m.removedResources, ["missing"], "reported as removed, so the proxy stops waiting");
  assert.equal(m.nonce, "7");
});
