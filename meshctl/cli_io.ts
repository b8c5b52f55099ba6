/**
 * Where a meshctl run's output goes: every command module takes a {@link CliIo}, and cli.ts builds the
 * command tree from those modules. Its own module, so that the commands do not import the tree that
 * imports them.
 *
 * @module
 */

/** Where a run's output goes, and how it reports its exit code. */
export interface CliIo {
  /** Writes `text` to standard output as is (callers add the newline). */
  stdout(text: string): void;
  /** Writes `text` to standard error as is. */
  stderr(text: string): void;
  /** Sets the process exit code the run ends with. */
  setExitCode(code: number): void;
}
