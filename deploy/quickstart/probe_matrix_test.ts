import assert from "node:assert/strict";
import { differences, expectedMatrix, formatMatrix, pair } from "./probe_matrix.ts";

Deno.test("expectedMatrix: Istio's mutual TLS migration task, stage by stage", () => {
  const failing = (stage: Parameters<typeof expectedMatrix>[0]) =>
    Object.entries(expectedMatrix(stage)).filter(([, p]) => p.status !== "200").map(([k, p]) =>
      `${k} ${p.status}/${p.exitCode}`
    );
  assert.deepEqual(failing("no policy"), []);
  assert.deepEqual(failing("STRICT in foo"), ["legacy->foo 000/56"]);
  assert.deepEqual(failing("STRICT mesh-wide"), ["legacy->foo 000/56", "legacy->bar 000/56"]);
});

Deno.test("differences and formatMatrix: a reset is 000 with its exit code", () => {
  const got = expectedMatrix("no policy");
  got[pair("legacy", "foo")] = { status: "000", exitCode: 56 };
  assert.deepEqual(differences(got, expectedMatrix("STRICT in foo")), []);
  assert.deepEqual(differences(got, expectedMatrix("no policy")), [
    "legacy->foo: got 000 (exit 56), expected 200",
  ]);
  delete got[pair("foo", "bar")];
  assert.deepEqual(differences(got, expectedMatrix("STRICT in foo")), [
    "foo->bar: got nothing, expected 200",
  ]);
  const text = formatMatrix(got);
  assert.equal(text.length, 9);
  assert.equal(text[0], "sleep.foo to httpbin.foo: 200");
  assert.equal(text[1], "sleep.foo to httpbin.bar: not probed");
  assert.equal(text[6], "sleep.legacy to httpbin.foo: 000 (exit 56)");
});
