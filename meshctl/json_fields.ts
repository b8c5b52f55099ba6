/**
 * Readers for JSON that meshctl did not write (a saved config dump, a proxy's or meshd's debug
 * pages): each checks one field's type and, when it is wrong, throws an error that names where the
 * value came from and the field path, so that the rest of meshctl reads typed values.
 *
 * @module
 */

/** A JSON object (not null, not a list). */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a JSON object (not null, not a list). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The object at `what`.
 *
 * @param what the source and field path, e.g. `d.json: mesh.authorizations`
 * @throws Error `<what>: not an object`
 */
export function objectAt(value: unknown, what: string): JsonObject {
  if (!isObject(value)) throw new Error(`${what}: not an object`);
  return value;
}

/**
 * The list at `what`; null or absent is undefined.
 *
 * @throws Error `<what>: not a list`
 */
export function optionalListAt(value: unknown, what: string): unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new Error(`${what}: not a list`);
  return value;
}

/**
 * The list of strings at `what`; null or absent is undefined.
 *
 * @throws Error naming `what` (and the index) when it is not a list of strings
 */
export function optionalStringsAt(value: unknown, what: string): string[] | undefined {
  const list = optionalListAt(value, what);
  if (list === undefined) return undefined;
  const out: string[] = [];
  for (const [i, v] of list.entries()) {
    if (typeof v !== "string") throw new Error(`${what}[${i}]: not a string`);
    out.push(v);
  }
  return out;
}

/**
 * The string at `what`; absent is undefined.
 *
 * @throws Error `<what>: not a string`
 */
export function optionalStringAt(value: unknown, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new Error(`${what}: not a string`);
  return value;
}

/**
 * A map of strings (labels) at `what`; null or absent is empty.
 *
 * @throws Error naming `what` and the key when a value is not a string
 */
export function stringMapAt(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(objectAt(value, what))) {
    if (typeof v !== "string") throw new Error(`${what}["${k}"]: not a string`);
    out[k] = v;
  }
  return out;
}

/**
 * `value` as one of `choices`.
 *
 * @throws Error `<what>: <value as JSON> is not one of <choices>`
 */
export function oneOf<T extends string>(choices: readonly T[], value: unknown, what: string): T {
  const found = choices.find((c) => c === value);
  if (found === undefined) {
    throw new Error(`${what}: ${JSON.stringify(value)} is not one of ${choices.join(", ")}`);
  }
  return found;
}

/** `--kebab-case` of a commander option key (`sourceIp` → `--source-ip`), for errors. */
export function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * A string option of a commander option record; absent is undefined.
 *
 * @throws Error naming the flag when the value is not a string
 */
export function optionalStringFlag(opts: JsonObject, key: string): string | undefined {
  return optionalStringAt(opts[key], flagName(key));
}

/**
 * A string option that has a default (so commander always sets it).
 *
 * @throws Error naming the flag when it is missing or not a string
 */
export function stringFlag(opts: JsonObject, key: string): string {
  const value = optionalStringFlag(opts, key);
  if (value === undefined) throw new Error(`${flagName(key)}: missing`);
  return value;
}

/**
 * A repeatable string option; absent is empty.
 *
 * @throws Error naming the flag when the value is not a list of strings
 */
export function stringsFlag(opts: JsonObject, key: string): string[] {
  return optionalStringsAt(opts[key], flagName(key)) ?? [];
}
