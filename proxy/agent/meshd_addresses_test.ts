import assert from "node:assert/strict";
import { AddressRing, meshdAddresses } from "./meshd_addresses.ts";

Deno.test("meshdAddresses: splits, trims and drops empty and repeated entries", () => {
  const table: [string | string[], string[]][] = [
    ["meshd.mesh-system.svc:15012", ["meshd.mesh-system.svc:15012"]],
    ["10.0.0.1:15012,10.0.0.2:15012", ["10.0.0.1:15012", "10.0.0.2:15012"]],
    [" a:1 , ,b:2,a:1 ", ["a:1", "b:2"]],
    [["[fd00::1]:15012", "b:2"], ["[fd00::1]:15012", "b:2"]],
  ];
  for (const [given, want] of table) assert.deepEqual(meshdAddresses(given), want, JSON.stringify(given));
});

Deno.test("meshdAddresses: an empty list is an error", () => {
  for (const given of ["", " , ", []]) assert.throws(() => meshdAddresses(given), /no meshd address/);
});

Deno.test("AddressRing: a failure moves to the next address and wraps; a stale failure does not move", () => {
  const ring = new AddressRing("a:1,b:2,c:3");
  assert.equal(ring.current, "a:1");
  assert.equal(ring.failed(), "b:2");
  assert.equal(ring.failed("a:1"), "b:2"); // a late report about an address already left
  assert.equal(ring.failed("b:2"), "c:3");
  assert.equal(ring.failed(), "a:1");
  const one = new AddressRing("a:1");
  assert.equal(one.failed(), "a:1");
});
