/**
 * Option parsers that give commander the semantics of Go's pflag, which the seed's flag types
 * (stringSlice, stringArray) come from.
 *
 * @module
 */

/** A stringSlice: repeatable, and each value may hold several comma-separated items. */
export function collectStrings(value: string, previous: string[]): string[] {
  return [...previous, ...value.split(",").filter((v) => v !== "")];
}

/** A stringArray: repeatable; commas are part of the value. */
export function collectArray(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Parses `--flag`, `--flag=true` and `--flag=false` the way Go's pflag does for booleans. */
export function parseBool(value: string | undefined): boolean {
  if (value === undefined || value === "" || value === "true") return true;
  if (value === "false") return false;
  throw new Error(`expected true or false, got "${value}"`);
}
