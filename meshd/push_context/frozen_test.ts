import assert from "node:assert/strict";
import { deepFreeze, FrozenMap } from "./frozen.ts";

Deno.test("FrozenMap reads like a Map", () => {
  const m = new FrozenMap([["a", 1], ["b", 2]]);
  assert.equal(m.size, 2);
  assert.equal(m.get("a"), 1);
  assert.equal(m.has("b"), true);
  assert.equal(m.has("c"), false);
  assert.deepEqual([...m], [["a", 1], ["b", 2]]);
  assert.deepEqual([...m.keys()], ["a", "b"]);
  assert.deepEqual([...m.values()], [1, 2]);
  assert.deepEqual([...m.entries()], [["a", 1], ["b", 2]]);
  const seen: [string, number][] = [];
  m.forEach((v, k, map) => {
    assert.equal(map, m);
    seen.push([k, v]);
  });
  assert.deepEqual(seen, [["a", 1], ["b", 2]]);
  assert.equal(Object.prototype.toString.call(m), "[object FrozenMap]");
});

Deno.test("FrozenMap: set, delete and clear throw and change nothing", () => {
  const m = new FrozenMap([["a", 1]]);
  // Typed as ReadonlyMap these calls do not compile; a caller that casts still gets a TypeError.
  const writable = m as unknown as Map<string, number>;
  assert.throws(() => writable.set("b", 2), { name: "TypeError", message: /cannot set: the map is frozen/ });
  assert.throws(() => writable.delete("a"), { name: "TypeError", message: /cannot delete/ });
  assert.throws(() => writable.clear(), { name: "TypeError", message: /cannot clear/ });
  // Map's own methods do not reach it: it is not a Map underneath.
  assert.throws(() => Map.prototype.set.call(m, "b", 2), TypeError);
  assert.throws(() => Map.prototype.clear.call(m), TypeError);
  assert.throws(() => {
    (m as unknown as { extra: number }).extra = 1;
  }, TypeError);
  assert.deepEqual([...m], [["a", 1]]);
});

Deno.test("FrozenMap copies its source: changes to the source do not show through", () => {
  const source = new Map([["a", 1]]);
  const m = new FrozenMap(source);
  source.set("b", 2);
  source.delete("a");
  assert.deepEqual([...m], [["a", 1]]);
});

Deno.test("deepFreeze freezes objects and arrays, and the values of FrozenMaps", () => {
  const value = deepFreeze({ list: [{ x: 1 }], map: new FrozenMap([["k", { y: [2] }]]) });
  assert.ok(Object.isFrozen(value) && Object.isFrozen(value.list) && Object.isFrozen(value.list[0]));
  assert.ok(Object.isFrozen(value.map.get("k")) && Object.isFrozen(value.map.get("k")!.y));
});

Deno.test("deepFreeze refuses a plain Map or Set, which freezing would leave writable", () => {
  assert.throws(() => deepFreeze({ m: new Map() }), /FrozenMaps, never a Map or Set/);
  assert.throws(() => deepFreeze([new Set()]), /FrozenMaps, never a Map or Set/);
});
