import assert from "node:assert/strict";
import { leaseName } from "./controllers.ts";

for (
  const [revision, want] of [
    [undefined, "meshd-leader"],
    ["", "meshd-leader"],
    ["default", "meshd-leader"],
    ["canary", "meshd-leader-canary"],
    ["1-24", "meshd-leader-1-24"],
  ] as const
) {
  Deno.test(`lease name of revision ${JSON.stringify(revision)}: ${want}`, () => {
    assert.equal(leaseName(revision), want);
  });
}
