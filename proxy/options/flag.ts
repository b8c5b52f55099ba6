/**
 * The shape of one `proxy` flag, shared by the flag tables of ./flags.ts and ./limit_flags.ts.
 *
 * @module
 */

/** One flag. */
export interface ProxyFlag {
  readonly name: string;
  readonly value: string;
  readonly description: string;
  readonly default?: string;
  /** Repeatable: every occurrence is kept. */
  readonly repeatable?: boolean;
  /** When the flag is not given, this environment variable (when set) supplies it. */
  readonly env?: string;
  /** Accepted but without effect in this release; `--help` says so and a warning is printed. */
  readonly noEffect?: string;
}
