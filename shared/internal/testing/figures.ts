/**
 * Figures that tests measure on the way (how long keys took to be in force, how many fetches a refresh
 * made): the suite stays quiet, and `MESH_TEST_FIGURES=1 ./dev deno test --allow-all <file>` prints them
 * for the READMEs that quote them. The test's assertions, not these lines, decide whether it passes.
 *
 * @module
 */

/** Whether figures are printed (`MESH_TEST_FIGURES=1`). */
export function figuresWanted(): boolean {
  return Deno.permissions.querySync({ name: "env", variable: "MESH_TEST_FIGURES" }).state === "granted" &&
    Deno.env.get("MESH_TEST_FIGURES") === "1";
}

/** Prints `text` (one or more lines) to stdout when figures are wanted; does nothing otherwise. */
export function figure(text: string): void {
  if (figuresWanted()) console.log(text);
}
