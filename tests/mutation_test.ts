/**
 * The mutation check (tests/mutation/run.ts) as part of the suite: every planted matcher bug in
 * authorization, JWT and PeerAuthentication logic must make a unit test fail. About a minute on
 * two idle cores; `./dev mutation` runs it alone and prints the table.
 */
import assert from "node:assert/strict";
import { MUTANTS, runMutants } from "./mutation/run.ts";

Deno.test("the unit tests catch every planted matcher bug", async () => {
  const report = await runMutants(MUTANTS);
  assert.ok(report.ok, `mutants not caught:\n${report.text}`);
  const areas = Map.groupBy(MUTANTS, (m) => m.area);
  for (const area of ["authorization", "jwt", "peer_authentication"]) {
    assert.ok((areas.get(area)?.length ?? 0) >= 8, `${area} has fewer than 8 mutants`);
  }
});

Deno.test("the mutation check reports a surviving, a stale and a broken mutant", async () => {
  const file = "shared/policy/authorization/evaluate.ts";
  const tests = ["shared/policy/authorization/evaluate_test.ts"];
  const m = (name: string, find: string, replace: string) => ({
    area: "self-test",
    name,
    file,
    tests,
    edits: [{ find, replace }],
  });
  const report = await runMutants([
    m("a comment changed", " * Compiles and evaluates in one call", " * Changed"),
    m("text that is not there", "no such text in evaluate.ts", ""),
    m("a syntax error", "export function authorize(", "export function authorize(("),
  ], { jobs: 1 });
  assert.deepEqual(report.results.map((r) => r.outcome), ["survived", "stale", "broken"], report.text);
  assert.equal(report.ok, false);
});
