/**
 * The shape of a planted bug (a mutant) for the mutation check (tests/mutation/run.ts).
 *
 * @module
 */

/** One text replacement in the mutated file. */
export interface Edit {
  /** Text that must occur exactly once in the file (else the mutant is stale and the check fails). */
  find: string;
  /** What replaces it. */
  replace: string;
}

/** One bug, planted alone in a copy of `shared/`, that the named test files must catch. */
export interface Mutant {
  /** The logic it breaks, e.g. `authorization`; `--area` selects by it. */
  area: string;
  /** What the bug does, e.g. `source.ip reads the destination IP`. */
  name: string;
  /** The mutated file, relative to the repository root (under `shared/`). */
  file: string;
  /** Replacements applied in order; each `find` must occur exactly once. */
  edits: readonly Edit[];
  /** Test files (relative to the repository root) that must fail with the bug in place. */
  tests: readonly string[];
}

/** A one-edit mutant: the common case of the tables. */
export function mutant(
  area: string,
  file: string,
  tests: readonly string[],
): (name: string, find: string, replace: string, ...more: Edit[]) => Mutant {
  return (name, find, replace, ...more) => ({ area, name, file, tests, edits: [{ find, replace }, ...more] });
}
