import assert from "node:assert/strict";
import { BatchedOutput } from "./batched_output.ts";

/** A sink that records each write and takes at most `max` octets per call (as a pipe may). */
function sink(max = Infinity): { writes: string[]; writeSync(p: Uint8Array): number } {
  const writes: string[] = [];
  return {
    writes,
    writeSync(p: Uint8Array): number {
      const n = Math.min(p.length, max);
      writes.push(new TextDecoder().decode(p.subarray(0, n)));
      return n;
    },
  };
}

const turn = () => new Promise((r) => setTimeout(r, 0));

Deno.test("batched output: the first line at once, the rest of the turn in one write, none lost", async () => {
  const s = sink();
  const out = new BatchedOutput(s);
  out.write("a\n");
  assert.deepEqual(s.writes, ["a\n"], "the first text is not delayed");
  for (let i = 0; i < 1000; i++) out.write(`line ${i}\n`);
  assert.equal(s.writes.length, 1, "the burst waits for the timer");
  await turn();
  await turn();
  assert.equal(s.writes.length, 2, "the burst left in one write");
  assert.equal(s.writes.join(""), "a\n" + Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join(""));
  await turn();
  out.write("later\n");
  assert.equal(s.writes.at(-1), "later\n", "after a quiet turn, text is written at once again");
  out.flush();
});

Deno.test("batched output: flush writes what waits, whole even when the sink takes part of it", () => {
  const s = sink(3);
  const out = new BatchedOutput(s);
  out.write("first\n");
  out.write("second\n");
  out.write("third\n");
  out.flush();
  assert.equal(s.writes.join(""), "first\nsecond\nthird\n");
  out.flush();
  assert.equal(s.writes.join(""), "first\nsecond\nthird\n", "a second flush writes nothing again");
});
