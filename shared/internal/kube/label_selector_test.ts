import assert from "node:assert/strict";
import { labelSelectorMatches } from "./label_selector.ts";

const CASES: [string, unknown, Record<string, string>, boolean][] = [
  ["absent selector", undefined, {}, true],
  ["empty selector", {}, { a: "1" }, true],
  ["matchLabels hit", { matchLabels: { a: "1" } }, { a: "1", b: "2" }, true],
  ["matchLabels miss", { matchLabels: { a: "1" } }, { a: "2" }, false],
  ["In hit", { matchExpressions: [{ key: "a", operator: "In", values: ["1", "2"] }] }, { a: "2" }, true],
  ["In absent", { matchExpressions: [{ key: "a", operator: "In", values: ["1"] }] }, {}, false],
  ["NotIn absent", { matchExpressions: [{ key: "a", operator: "NotIn", values: ["false"] }] }, {}, true],
  [
    "NotIn hit",
    { matchExpressions: [{ key: "a", operator: "NotIn", values: ["false"] }] },
    { a: "false" },
    false,
  ],
  ["Exists", { matchExpressions: [{ key: "a", operator: "Exists" }] }, { a: "" }, true],
  ["DoesNotExist", { matchExpressions: [{ key: "a", operator: "DoesNotExist" }] }, { a: "x" }, false],
  [
    "unknown operator",
    { matchExpressions: [{ key: "a", operator: "Gt", values: ["1"] }] },
    { a: "2" },
    false,
  ],
  [
    "labels and expressions are ANDed",
    { matchLabels: { a: "1" }, matchExpressions: [{ key: "b", operator: "DoesNotExist" }] },
    { a: "1", b: "x" },
    false,
  ],
];

for (const [name, selector, labels, want] of CASES) {
  Deno.test(`labelSelectorMatches: ${name}`, () =>
    assert.equal(labelSelectorMatches(selector, labels), want));
}
