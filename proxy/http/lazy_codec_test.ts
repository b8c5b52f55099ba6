import assert from "node:assert/strict";
import { LazyCodec, type ListenerCodec } from "./lazy_codec.ts";

class Codec implements ListenerCodec {
  swept: number[] = [];
  closed = false;
  sweep(now: number): void {
    this.swept.push(now);
  }
  close(): void {
    this.closed = true;
  }
}

/** A load the test resolves or rejects by hand, counting its calls. */
function manualLoad(): {
  load: () => Promise<Codec>;
  calls: () => number;
  resolve: (c: Codec) => void;
  reject: (e: Error) => void;
} {
  let calls = 0;
  let resolve: (c: Codec) => void = () => {};
  let reject: (e: Error) => void = () => {};
  return {
    load: () => {
      calls++;
      return new Promise<Codec>((res, rej) => {
        resolve = res;
        reject = rej;
      });
    },
    calls: () => calls,
    resolve: (c) => resolve(c),
    reject: (e) => reject(e),
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("LazyCodec: loads once with the first use, queues uses meanwhile, then serves at once", async () => {
  const m = manualLoad();
  const lazy = new LazyCodec(m.load);
  lazy.sweep(1);
  assert.deepStrictEqual(m.calls(), 0, "sweeping does not load");
  const used: Codec[] = [];
  lazy.use((c) => used.push(c), () => {});
  lazy.use((c) => used.push(c), () => {});
  assert.deepStrictEqual([m.calls(), used.length], [1, 0]);
  const codec = new Codec();
  m.resolve(codec);
  await settle();
  assert.deepStrictEqual(used, [codec, codec]);
  assert.deepStrictEqual(lazy.loaded, codec);
  lazy.use((c) => used.push(c), () => {});
  assert.deepStrictEqual(used.length, 3, "a loaded codec is used synchronously");
  lazy.sweep(7);
  assert.deepStrictEqual(codec.swept, [7]);
  lazy.close();
  assert.deepStrictEqual(codec.closed, true);
});

Deno.test("LazyCodec: closed while loading, the codec is closed and the waiting uses fail", async () => {
  const m = manualLoad();
  const lazy = new LazyCodec(m.load);
  const failures: string[] = [];
  lazy.use(() => failures.push("used"), (e) => failures.push(String(e)));
  lazy.close();
  const codec = new Codec();
  m.resolve(codec);
  await settle();
  assert.deepStrictEqual(codec.closed, true);
  assert.deepStrictEqual(failures, ["Error: listener closed"]);
  lazy.use(() => failures.push("used"), (e) => failures.push(String(e)));
  assert.deepStrictEqual(failures.length, 2);
  assert.deepStrictEqual(m.calls(), 1);
});

Deno.test("LazyCodec: a failed load fails its uses and the next use loads again", async () => {
  const m = manualLoad();
  const lazy = new LazyCodec(m.load);
  const seen: string[] = [];
  lazy.use(() => seen.push("used"), (e) => seen.push(String(e)));
  m.reject(new Error("no module"));
  await settle();
  assert.deepStrictEqual(seen, ["Error: no module"]);
  lazy.use((c) => seen.push(c.closed ? "closed" : "used"), (e) => seen.push(String(e)));
  assert.deepStrictEqual(m.calls(), 2);
  m.resolve(new Codec());
  await settle();
  assert.deepStrictEqual(seen, ["Error: no module", "used"]);
});
