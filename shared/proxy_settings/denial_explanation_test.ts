import assert from "node:assert/strict";
import { denialExplanationOf, explanationAudience, NO_DENIAL_EXPLANATION } from "./denial_explanation.ts";

const ROOT = "spiffe://cluster.local/ns/mesh-system/sa/meshctl";
const FOO = "spiffe://cluster.local/ns/foo/sa/sleep";

Deno.test("denialExplanationOf: absent is nobody; lists are kept", () => {
  assert.deepEqual(denialExplanationOf(undefined, "x"), NO_DENIAL_EXPLANATION);
  assert.deepEqual(denialExplanationOf({ principals: null }, "x"), NO_DENIAL_EXPLANATION);
  assert.deepEqual(
    denialExplanationOf({ principals: ["cluster.local/ns/mesh-system/*"], ipBlocks: ["127.0.0.1/32"] }, "x"),
    { principals: ["cluster.local/ns/mesh-system/*"], ipBlocks: ["127.0.0.1/32"] },
  );
});

const bad: [unknown, RegExp][] = [
  ["yes", /^Error: x: expected a map$/],
  [{ principals: "a" }, /^Error: x\.principals: expected a list$/],
  [{ principals: [""] }, /^Error: x\.principals\[0\]: "" is not a principal/],
  [
    { principals: ["spiffe://cluster.local/ns/a/sa/b"] },
    /x\.principals\[0\]: .* is not a principal \(without spiffe/,
  ],
  [
    { ipBlocks: ["127.0.0.1", "10.0.0.0/33"] },
    /^Error: x\.ipBlocks\[1\]: "10\.0\.0\.0\/33" is not an IP address/,
  ],
  [{ ipBlocks: [7] }, /^Error: x\.ipBlocks\[0\]: 7 is not/],
];
for (const [value, message] of bad) {
  Deno.test(`denialExplanationOf: ${JSON.stringify(value)} is an error naming the field`, () => {
    assert.throws(() => denialExplanationOf(value, "x"), message);
  });
}

// Each row: a matching source and a non-matching one, so a matcher that always answers yes or no fails.
const rows: { name: string; principals?: string[]; ipBlocks?: string[]; yes: object; no: object }[] = [
  {
    name: "nobody by default, not even loopback",
    yes: { principal: undefined, peerIp: "127.0.0.2", never: true },
    no: { principal: ROOT, peerIp: "127.0.0.1" },
  },
  {
    name: "a principal prefix: the root namespace",
    principals: ["cluster.local/ns/mesh-system/*"],
    yes: { principal: ROOT, peerIp: "10.0.0.9" },
    no: { principal: FOO, peerIp: "10.0.0.9" },
  },
  {
    name: "an exact principal",
    principals: ["cluster.local/ns/foo/sa/sleep"],
    yes: { principal: FOO, peerIp: "10.0.0.9" },
    no: { principal: "spiffe://cluster.local/ns/foo/sa/sleep2", peerIp: "10.0.0.9" },
  },
  {
    name: "`*` matches any peer with a principal, never plain text",
    principals: ["*"],
    yes: { principal: FOO, peerIp: "10.0.0.9" },
    no: { principal: undefined, peerIp: "10.0.0.9" },
  },
  {
    name: "loopback by address",
    ipBlocks: ["127.0.0.1/32", "::1"],
    yes: { principal: undefined, peerIp: "127.0.0.1" },
    no: { principal: undefined, peerIp: "127.0.0.2" },
  },
  {
    name: "a block; an IPv4-mapped peer counts as IPv4",
    ipBlocks: ["10.0.0.0/8"],
    yes: { principal: undefined, peerIp: "::ffff:10.1.2.3" },
    no: { principal: ROOT, peerIp: "11.0.0.1" },
  },
];
for (const row of rows) {
  Deno.test(`explanationAudience: ${row.name}`, () => {
    const may = explanationAudience({ principals: row.principals ?? [], ipBlocks: row.ipBlocks ?? [] });
    const yes = row.yes as { principal: string | undefined; peerIp: string; never?: boolean };
    assert.equal(may(yes), yes.never !== true);
    assert.equal(may(row.no as { principal: string | undefined; peerIp: string }), false);
  });
}
