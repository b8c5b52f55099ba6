/**
 * The error of bad input to the lab (a topology file, files to apply): every problem found, one
 * line each, `<file>[:<line>]: <field>: <reason>`.
 *
 * @module
 */

/** Thrown with every problem of the input at once. */
export class InputError extends Error {
  /** One line per problem. */
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join("\n"));
    this.name = "InputError";
    this.problems = problems;
  }
}
