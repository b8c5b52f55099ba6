/**
 * JSON values and RFC 6902 patch operations as the sidecar injection builds them: meshd's admission
 * webhooks (meshd/webhooks) and meshctl's `orch-inject` share them. Pure.
 *
 * @module
 */

/** A JSON object as parsed. */
export type JsonObject = Record<string, unknown>;

/** One RFC 6902 operation (the injection only adds and replaces). */
export interface JsonPatchOperation {
  op: "add" | "replace" | "remove";
  /** An RFC 6901 JSON pointer. */
  path: string;
  value?: unknown;
}

/** Narrows a value to a JSON object. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Escapes one JSON-pointer segment (RFC 6901: `~` as `~0`, `/` as `~1`). */
export function pointerSegment(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * Applies `ops` to a copy of `doc` as the API server does (no JSON-patch library is in
 * the lock); meshctl orch-inject writes the injected object with it (RFC 6902 add/replace/remove; `-` appends).
 *
 * @throws Error when a path does not exist, as the API server refuses such a patch
 */
export function applyJsonPatch(doc: JsonObject, ops: JsonPatchOperation[]): JsonObject {
  const out: JsonObject = structuredClone(doc);
  for (const op of ops) {
    const segments = op.path.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = segments.pop();
    if (last === undefined) throw new Error(`${op.path}: the root cannot be patched here`);
    let parent: unknown = out;
    for (const s of segments) {
      parent = Array.isArray(parent) ? parent[Number(s)] : (parent as JsonObject | undefined)?.[s];
      if (typeof parent !== "object" || parent === null) throw new Error(`${op.path}: ${s} does not exist`);
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (op.op === "add") parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === "replace") parent[i] = structuredClone(op.value);
      else parent.splice(i, 1);
    } else {
      const o = parent as JsonObject;
      if (op.op !== "add" && !(last in o)) throw new Error(`${op.path}: does not exist`);
      if (op.op === "remove") delete o[last];
      else o[last] = structuredClone(op.value);
    }
  }
  return out;
}
