import assert from "node:assert/strict";
import { jsonToStruct, structToJson } from "./struct.ts";

Deno.test("JSON survives Struct and back: strings, numbers, booleans, null, lists, nested maps", () => {
  const json = { NAMESPACE: "foo", N: 3, ok: true, none: null, IPS: ["10.0.0.1", 2], LABELS: { app: "x" } };
  assert.deepEqual(structToJson(jsonToStruct(json)), json);
});

Deno.test("a missing or empty Struct is an empty map", () => {
  assert.deepEqual(structToJson(undefined), {});
  assert.deepEqual(structToJson({}), {});
});
