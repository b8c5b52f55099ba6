/**
 * The error for a bad file of ROOT_CA_DIR (meshd's CA material and the bootstrap-token signing key):
 * its message is `<path>: <reason>`, so an operator sees which file and why.
 *
 * @module
 */

/** A problem with one file of ROOT_CA_DIR; `message` is `<path>: <reason>`. */
export class RootCaError extends Error {
  /** The path of the file at fault (or of the directory). */
  readonly file: string;
  /** What is wrong with it, and what to do when that is not obvious. */
  readonly reason: string;

  /**
   * Creates the error; its message is `<file>: <reason>`.
   *
   * @param file the path of the file at fault (or of the directory)
   * @param reason what is wrong with it
   */
  constructor(file: string, reason: string) {
    super(`${file}: ${reason}`);
    this.file = file;
    this.reason = reason;
    this.name = "RootCaError";
  }
}
