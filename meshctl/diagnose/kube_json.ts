/**
 * Reading the API server's JSON in the diagnose commands without casts: objects, label maps, and
 * `k=v,k2=v2` label lists as kubectl takes them.
 *
 * @module
 */

/** A JSON object. */
export type Obj = Record<string, unknown>;

/** `v` as an object; `{}` when it is not one. */
export function obj(v: unknown): Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Obj : {};
}

/** `v` as a list of objects; `[]` when it is not a list. */
export function objs(v: unknown): Obj[] {
  return Array.isArray(v) ? v.map(obj) : [];
}

/** The string entries of `metadata.labels` or `metadata.annotations`. */
export function labelsOf(metadata: unknown, field: "labels" | "annotations"): Record<string, string> {
  return Object.fromEntries(
    Object.entries(obj(obj(metadata)[field])).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** `k=v, k2=v2`, or `none`. */
export function show(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(", ") || "none";
}

/**
 * Parses `k=v,k2=v2`.
 *
 * @throws Error naming the flag and the pair that is not `key=value`
 */
export function parseLabels(flag: string, text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(",").filter((p) => p !== "")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`${flag}: "${pair}" is not key=value`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}
