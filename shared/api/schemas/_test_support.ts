/**
 * Assertions shared by the kinds' table-driven tests. Test-only: excluded from the JSR package.
 *
 * @module
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { type FieldPath, type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { authorizationPolicy } from "./authorization_policy.ts";

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

// ---------------------------------------------------------------------------------------------
// AuthorizationPolicy cases (authorization_policy, authorization_conditions and path_template tests)

/** One AuthorizationPolicy spec and every finding it must produce, exactly; [] means clean. */
export interface AuthorizationCase {
  name: string;
  spec: unknown;
  want: ExpectedFinding[];
}

type Path = (string | number)[];

/** An expected error. */
export const err = (path: Path, message: string): ExpectedFinding => ({ severity: "error", path, message });
/** An expected warning. */
export const warn = (path: Path, message: string): ExpectedFinding => ({
  severity: "warning",
  path,
  message,
});

/** The AuthorizationPolicy `ap` in namespace `foo` with the spec. */
export function authorizationResource(spec: unknown): unknown {
  return {
    apiVersion: "security.mesh.io/v1",
    kind: "AuthorizationPolicy",
    metadata: { name: "ap", namespace: "foo" },
    spec,
  };
}

/** The selector of {@link allow} and {@link deny}. */
export const SELECTOR = { matchLabels: { app: "httpbin" } };
/** The first rule. */
export const R0: Path = ["spec", "rules", 0];
/** The first rule's first source. */
export const SRC: Path = [...R0, "from", 0, "source"];
/** The first rule's first operation. */
export const OP: Path = [...R0, "to", 0, "operation"];
/** The first rule's first condition. */
export const W0: Path = [...R0, "when", 0];

/** An ALLOW policy with one rule. */
export const allow = (rule: unknown): unknown => ({ selector: SELECTOR, rules: [rule] });
/** A DENY policy with one rule. */
export const deny = (rule: unknown): unknown => ({ selector: SELECTOR, action: "DENY", rules: [rule] });
/** An ALLOW policy whose one rule has one source. */
export const fromSource = (source: unknown): unknown => allow({ from: [{ source }] });
/** An ALLOW policy whose one rule has one operation. */
export const toOperation = (operation: unknown): unknown => allow({ to: [{ operation }] });
/** An ALLOW policy whose one rule has one condition. */
export const when = (condition: unknown): unknown => allow({ when: [condition] });

/** One `Deno.test` per case: the case's findings are exactly the expected ones. */
export function testAuthorizationCases(cases: readonly AuthorizationCase[]): void {
  for (const c of cases) {
    Deno.test(`AuthorizationPolicy: ${c.name}`, () => {
      assertFindings(validateResource(authorizationPolicy, authorizationResource(c.spec)), c.want);
    });
  }
}
