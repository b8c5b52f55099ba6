import assert from "node:assert/strict";
import { processDeadline, within } from "./deadline.ts";

Deno.test("within: the value or error of a promise that settles in time", async () => {
  assert.equal(await within(Promise.resolve(7), 1000, "seven"), 7);
  await assert.rejects(within(Promise.reject(new Error("refused")), 1000, "x"), { message: "refused" });
});

Deno.test("within: a promise that never settles fails naming what was awaited; no timer is left", async () => {
  await assert.rejects(within(new Promise(() => {}), 20, "the socket closed"), {
    message: "the socket closed: not within 20 ms",
  });
});

Deno.test("processDeadline: a process that outlives it is killed and end() names it", async () => {
  const slow = processDeadline(200, "sleep 30");
  const out = await new Deno.Command("sleep", { args: ["30"], signal: slow.signal }).output();
  assert.equal(out.success, false);
  assert.throws(() => slow.end(), { message: "sleep 30: not within 200 ms (killed)" });

  const quick = processDeadline(10_000, "true");
  assert.equal((await new Deno.Command("true", { signal: quick.signal }).output()).success, true);
  quick.end();
});
