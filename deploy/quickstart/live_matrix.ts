/**
 * The quickstart's matrix probed live on a lab: `curl http://httpbin.<to>:8000/ip` from `sleep.<from>`
 * for every pair at once, and probing again until it is a stage's (a policy takes meshd's debounce and
 * push and the proxies' update to show). Used by the quickstart and by tests/e2e.
 *
 * @module
 */
import { type LabState, probe, workloadOf } from "../lab/mod.ts";
import { differences, expectedMatrix, type Matrix, NAMESPACES, pair, type Stage } from "./probe_matrix.ts";

/** Every pair probed once, concurrently. */
export async function liveMatrix(state: LabState): Promise<Matrix> {
  const m: Matrix = {};
  await Promise.all(NAMESPACES.flatMap((from) =>
    NAMESPACES.map(async (to) => {
      m[pair(from, to)] = await probe(workloadOf(state, `${from}/sleep`), `http://httpbin.${to}:8000/ip`);
    })
  ));
  return m;
}

/** What {@link settleMatrix} saw last, the pairs still unlike the stage's, and how long it probed (ms). */
export interface Settled {
  got: Matrix;
  differences: string[];
  ms: number;
}

/** Probes every 200 ms until the matrix is `stage`'s or `withinMs` passed. */
export async function settleMatrix(state: LabState, stage: Stage, withinMs: number): Promise<Settled> {
  const want = expectedMatrix(stage);
  const start = Date.now();
  let got = await liveMatrix(state);
  while (differences(got, want).length > 0 && Date.now() - start < withinMs) {
    await new Promise((r) => setTimeout(r, 200));
    got = await liveMatrix(state);
  }
  return { got, differences: differences(got, want), ms: Date.now() - start };
}
