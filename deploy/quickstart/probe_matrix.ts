/**
 * The probe matrix of Istio's "Mutual TLS Migration" task: `curl http://httpbin.<to>:8000/ip` from
 * `sleep.<from>` for every pair of namespaces, the outcome the task expects at each of its stages,
 * and the matrix as text.
 *
 * @module
 */
import { type Probe, probeText } from "../lab/mod.ts";

/** The namespaces of the task: foo and bar with sidecars, legacy without. */
export const NAMESPACES: readonly string[] = ["foo", "bar", "legacy"];

/** The task's stages. */
export type Stage = "no policy" | "STRICT in foo" | "STRICT mesh-wide";

/** An outcome per `<from>-><to>` pair. */
export type Matrix = Record<string, Pick<Probe, "status" | "exitCode">>;

/** The key of a pair. */
export function pair(from: string, to: string): string {
  return `${from}->${to}`;
}

/**
 * What the task expects: 200 everywhere, except that an unproxied client (legacy) reaching a
 * server under STRICT gets a reset (`000`, curl exit code 56).
 */
export function expectedMatrix(stage: Stage): Matrix {
  const strict = new Set(
    stage === "STRICT in foo" ? ["foo"] : stage === "STRICT mesh-wide" ? ["foo", "bar"] : [],
  );
  const m: Matrix = {};
  for (const from of NAMESPACES) {
    for (const to of NAMESPACES) {
      m[pair(from, to)] = from === "legacy" && strict.has(to)
        ? { status: "000", exitCode: 56 }
        : { status: "200", exitCode: 0 };
    }
  }
  return m;
}

/** The pairs whose outcome differs, as `from->to: got X, expected Y`. */
export function differences(got: Matrix, want: Matrix): string[] {
  return Object.keys(want).filter((k) =>
    probeText(got[k] ?? { status: "-", exitCode: -1 }) !== probeText(want[k])
  )
    .map((k) => `${k}: got ${got[k] ? probeText(got[k]) : "nothing"}, expected ${probeText(want[k])}`);
}

/** The matrix as the task prints it (`sleep.foo to httpbin.bar: 200`), one line per pair. */
export function formatMatrix(m: Matrix): string[] {
  const lines: string[] = [];
  for (const from of NAMESPACES) {
    for (const to of NAMESPACES) {
      const p = m[pair(from, to)];
      lines.push(`sleep.${from} to httpbin.${to}: ${p ? probeText(p) : "not probed"}`);
    }
  }
  return lines;
}
