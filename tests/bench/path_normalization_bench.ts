/**
 * Per-request cost of path normalization (shared's normalizePath, what every listener runs once per
 * request) under each `meshConfig.pathNormalization` option: a clean target (the common request,
 * which the inbound filter's byte scan usually skips altogether) and a hostile one with every trick.
 * Run with `./dev bench:micro` or `./dev deno bench --allow-all tests/bench/path_normalization_bench.ts`.
 */
import { normalizePath, PATH_NORMALIZATIONS } from "../../shared/mod.ts";

const CLEAN = "/api/v1/items?x=1";
const HOSTILE = "/a/%2e%2e//%2Fheaders%5C..\\x/./y?q=/../";

for (const option of PATH_NORMALIZATIONS) {
  Deno.bench(`normalizePath ${option}: clean ${CLEAN}`, { group: "clean" }, () => {
    normalizePath(CLEAN, option);
  });
  Deno.bench(`normalizePath ${option}: hostile ${HOSTILE}`, { group: "hostile" }, () => {
    normalizePath(HOSTILE, option);
  });
}
