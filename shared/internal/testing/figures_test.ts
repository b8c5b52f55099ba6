import assert from "node:assert/strict";
import { figuresWanted } from "./figures.ts";

Deno.test("figuresWanted: only MESH_TEST_FIGURES=1", () => {
  const before = Deno.env.get("MESH_TEST_FIGURES");
  try {
    for (const [value, wanted] of [["1", true], ["0", false], ["yes", false]] as const) {
      Deno.env.set("MESH_TEST_FIGURES", value);
      assert.equal(figuresWanted(), wanted, value);
    }
    Deno.env.delete("MESH_TEST_FIGURES");
    assert.equal(figuresWanted(), false);
  } finally {
    if (before === undefined) Deno.env.delete("MESH_TEST_FIGURES");
    else Deno.env.set("MESH_TEST_FIGURES", before);
  }
});
