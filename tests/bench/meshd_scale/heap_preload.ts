/**
 * Loaded into meshd with `--preload` when the bench runs with BENCH_HEAP_DIR (README.md beside this
 * file): on SIGUSR2 meshd writes what holds its memory into that directory, `<label>.json`
 * (process.memoryUsage, V8 heap statistics and spaces, /proc/self/smaps_rollup) and, unless
 * BENCH_HEAP_SNAPSHOT=0, `<label>.heapsnapshot` (node:v8 writeHeapSnapshot; about the size of the
 * JS heap, so leave it off at 10k), then `<label>.done`. The label is read from `<dir>/label`. With
 * BENCH_MALLOC_TRIM=1 it then calls glibc's malloc_trim(0) and records VmRSS before and after in
 * `<label>.trim.json` (and /proc/self/smaps as `<label>.smaps`): what falls is memory glibc held
 * free, not memory meshd uses.
 *
 * @module
 */
import v8 from "node:v8";
import process from "node:process";

const dir = Deno.env.get("BENCH_HEAP_DIR");
if (dir) {
  Deno.addSignalListener("SIGUSR2", () => {
    const label = Deno.readTextFileSync(`${dir}/label`).trim();
    const stats = {
      memoryUsage: process.memoryUsage(),
      heap: v8.getHeapStatistics(),
      spaces: v8.getHeapSpaceStatistics(),
      smapsRollup: Deno.readTextFileSync("/proc/self/smaps_rollup"),
    };
    Deno.writeTextFileSync(`${dir}/${label}.json`, JSON.stringify(stats, null, 1));
    if (Deno.env.get("BENCH_HEAP_SNAPSHOT") !== "0") v8.writeHeapSnapshot(`${dir}/${label}.heapsnapshot`);
    if (Deno.env.get("BENCH_MALLOC_TRIM") === "1") {
      const before = rssKiB();
      const libc = Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
      libc.symbols.malloc_trim(0n);
      libc.close();
      Deno.writeTextFileSync(`${dir}/${label}.trim.json`, JSON.stringify({ before, after: rssKiB() }));
      Deno.copyFileSync("/proc/self/smaps", `${dir}/${label}.smaps`);
    }
    Deno.writeTextFileSync(`${dir}/${label}.done`, "");
  });
}

function rssKiB(): number {
  return Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"))![1]);
}
