/**
 * Assertions shared by the kinds' table-driven tests. Test-only: excluded from the JSR package.
 *
 * @module
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { type FieldPath, type Finding, formatFieldPath, type Severity } from "../finding.ts";

/** A finding as a test expects it: exact path, a fragment of the message. */
export interface ExpectedFinding {
  severity: Severity;
  path: FieldPath;
  message: string;
}

/** One line per finding, for assertion messages. */
export function showFinding(f: Finding | ExpectedFinding): string {
  return `${f.severity} ${JSON.stringify(f.path)}: ${f.message}`;
}

/** Asserts that the findings are exactly the expected ones, in any order. */
export function assertFindings(got: Finding[], want: ExpectedFinding[]): void {
  const rest = [...got];
  for (const w of want) {
    const i = rest.findIndex((f) =>
      f.severity === w.severity && isDeepStrictEqual(f.path, w.path) && f.message.includes(w.message)
    );
    assert.ok(
      i >= 0,
      `missing finding: ${showFinding(w)}\ngot:\n  ${got.map(showFinding).join("\n  ") || "(none)"}`,
    );
    rest.splice(i, 1);
  }
  assert.equal(rest.length, 0, `unexpected findings:\n  ${rest.map(showFinding).join("\n  ")}`);
}

/**
 * With `want`, asserts that one finding has that formatted path (`spec.ports[0].number`), message
 * fragment and severity (default error); without, that there is no error at all.
 */
export function assertFindingOrValid(
  findings: Finding[],
  want: { path: string; message: string; severity?: Severity } | undefined,
): void {
  if (want) {
    const hit = findings.find((f) =>
      formatFieldPath(f.path) === want.path && f.message.includes(want.message)
    );
    assert.ok(hit, `want ${want.path}: ${want.message}\ngot:\n${findings.map(showFinding).join("\n")}`);
    assert.equal(hit.severity, want.severity ?? "error");
  } else {
    assert.deepEqual(findings.filter((f) => f.severity === "error").map(showFinding), []);
  }
}
