import assert from "node:assert/strict";
import { decodeScopes, parseScopeLevels } from "./command.ts";

const ADS = { name: "ads", output_level: "info", stack_trace_level: "none", log_callers: false };

Deno.test("decodeScopes: ctrlz's /scopej/ list is read field by field", () => {
  assert.deepEqual(decodeScopes(JSON.stringify([ADS, { ...ADS, name: "ca", log_callers: true }]), "h:9876"), [
    ADS,
    { ...ADS, name: "ca", log_callers: true },
  ]);
  assert.deepEqual(decodeScopes("[]", "h:9876"), []);
});

Deno.test("decodeScopes: anything else is an error naming the address and the entry", () => {
  for (
    const [text, error] of [
      ["<html>", "meshd's ctrlz at h:9876: /scopej/ is not JSON"],
      ['{"name": "ads"}', "meshd's ctrlz at h:9876: /scopej/ is not a JSON array of scopes"],
      ["[null]", "meshd's ctrlz at h:9876: /scopej/ [0] is not an object"],
      [
        JSON.stringify([ADS, { ...ADS, output_level: 3 }]),
        "meshd's ctrlz at h:9876: /scopej/ [1].output_level is not a string",
      ],
      [
        JSON.stringify([{ output_level: "info" }]),
        "meshd's ctrlz at h:9876: /scopej/ [0].name is not a string",
      ],
    ]
  ) {
    assert.throws(() => decodeScopes(text, "h:9876"), { message: error }, text);
  }
});

Deno.test("parseScopeLevels: <scope>:<level> and bare levels; an unknown level names the flag and the part", () => {
  assert.deepEqual(parseScopeLevels("--level", "ads:debug,,warn"), [
    { scope: "ads", level: "debug" },
    { scope: "", level: "warn" },
  ]);
  assert.throws(() => parseScopeLevels("--level", "ads:loud"), {
    message: '--level: unknown level "loud" in "ads:loud"; levels: none, error, warn, info, debug',
  });
});
