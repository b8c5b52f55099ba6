import assert from "node:assert/strict";
import { FreshWarnings } from "./fresh_warnings.ts";

/** [this build's warnings, what is logged]. */
const STEPS: [string[], string[]][] = [
  [["a", "b"], ["a", "b"]],
  [["a", "b"], []],
  [["b", "c"], ["c"]],
  [[], []],
  [["a"], ["a"]],
];

Deno.test("FreshWarnings: each warning once while it stays, again after it went away", () => {
  const w = new FreshWarnings();
  for (const [current, logged] of STEPS) assert.deepEqual(w.fresh(current), logged, JSON.stringify(current));
});
