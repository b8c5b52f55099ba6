import assert from "node:assert/strict";
import { commandMissing, httpbinMissing, pythonModulesMissing, requires } from "./prerequisites.ts";

/** Runs `body` with CI set to `value` (or unset), restoring what was there. */
function withCi<T>(value: string | undefined, body: () => T): T {
  const before = Deno.env.get("CI");
  const set = (v: string | undefined) => v === undefined ? Deno.env.delete("CI") : Deno.env.set("CI", v);
  set(value);
  try {
    return body();
  } finally {
    set(before);
  }
}

const def: { name: string; ignore?: boolean; fn: () => void } = { name: "needs root", fn: () => {} };

Deno.test("requires: nothing missing leaves the definition as it is", () => {
  for (const ci of [undefined, "true"]) assert.equal(withCi(ci, () => requires(undefined, def)), def);
});

Deno.test("requires: outside CI a missing prerequisite ignores the test, its reason in the name", () => {
  for (const ci of [undefined, "false", "1"]) {
    const d = withCi(ci, () => requires("the lab needs root", def));
    assert.equal(d.ignore, true);
    assert.equal(d.name, "needs root (ignored: the lab needs root)");
  }
});

Deno.test("requires: under CI=true a missing prerequisite fails the test, naming it and what is missing", () => {
  const d = withCi("true", () => requires("the lab needs root", def));
  assert.equal(d.ignore, undefined);
  assert.equal(d.name, "needs root");
  assert.throws(
    () => d.fn(),
    { message: "needs root: CI=true and the lab needs root: install it (./dev test does, as root)" },
  );
});

Deno.test("commandMissing and pythonModulesMissing name what is absent", () => {
  assert.equal(commandMissing("sh"), undefined);
  assert.equal(commandMissing("no-such-command-x"), "no-such-command-x is not installed");
  assert.equal(pythonModulesMissing(["json"], "python3"), undefined);
  assert.equal(
    pythonModulesMissing(["no_such_module_x"], "python3-x"),
    "python3 cannot import no_such_module_x (Debian: python3-x)",
  );
  assert.ok(httpbinMissing() === undefined || /httpbin|gunicorn/.test(httpbinMissing()!));
});
