/**
 * The PATCH bodies kube-apiserver accepts: JSON merge patch (RFC 7386, `application/merge-patch+json`),
 * JSON patch (RFC 6902, `application/json-patch+json`) and strategic merge patch
 * (`application/strategic-merge-patch+json`, built-in types only, as `kubectl apply` and
 * `kubectl label` send it). Strategic merge here knows the merge keys of the common built-in list
 * fields (table below, from the Kubernetes API's `patchMergeKey` tags) and the directives `$patch`,
 * `$retainKeys`, `$setElementOrder/` (ordering is not applied) and `$deleteFromPrimitiveList/`; any
 * other list is replaced, as for a field without a merge strategy.
 *
 * @module
 */
import { ApiError, clone, isObject, type KubeObject } from "./types.ts";

/** RFC 7386 JSON merge patch: null deletes, objects merge recursively, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: KubeObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescape(seg: string): string {
  return seg.replaceAll("~1", "/").replaceAll("~0", "~");
}

function parentOf(doc: unknown, path: string): { parent: unknown; key: string } {
  if (!path.startsWith("/")) {
    throw new ApiError("BadRequest", `JSON patch path "${path}" does not start with /`);
  }
  const segs = path.slice(1).split("/").map(unescape);
  let cur = doc;
  for (const s of segs.slice(0, -1)) {
    cur = Array.isArray(cur) ? cur[Number(s)] : isObject(cur) ? cur[s] : undefined;
    if (cur === undefined) throw new ApiError("Invalid", `JSON patch: path "${path}": missing parent "${s}"`);
  }
  return { parent: cur, key: segs[segs.length - 1] };
}

function getAt(doc: unknown, path: string): unknown {
  if (path === "") return doc;
  const { parent, key } = parentOf(doc, path);
  const v = Array.isArray(parent) ? parent[Number(key)] : isObject(parent) ? parent[key] : undefined;
  if (v === undefined) throw new ApiError("Invalid", `JSON patch: path "${path}" not found`);
  return v;
}

function addAt(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  if (path === "") return clone(value);
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = key === "-" ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) {
      throw new ApiError("Invalid", `JSON patch: index "${key}" out of range at "${path}"`);
    }
    parent.splice(i, replace ? 1 : 0, clone(value));
  } else if (isObject(parent)) {
    if (replace && !Object.hasOwn(parent, key)) {
      throw new ApiError("Invalid", `JSON patch: path "${path}" not found`);
    }
    parent[key] = clone(value);
  } else throw new ApiError("Invalid", `JSON patch: parent of "${path}" is not an object or array`);
  return doc;
}

function removeAt(doc: unknown, path: string): unknown {
  const { parent, key } = parentOf(doc, path);
  getAt(doc, path);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else if (isObject(parent)) delete parent[key];
  return doc;
}

/**
 * Applies an RFC 6902 JSON patch (add, remove, replace, move, copy, test) to a copy of `doc`.
 *
 * @throws ApiError Invalid naming the operation and path that fails; BadRequest when `ops` is not an array
 */
export function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new ApiError("BadRequest", "JSON patch body must be an array of operations");
  let out = clone(doc);
  for (const op of ops) {
    if (!isObject(op) || typeof op.path !== "string") {
      throw new ApiError("BadRequest", "JSON patch operation without path");
    }
    const from = typeof op.from === "string" ? op.from : "";
    switch (op.op) {
      case "add":
        out = addAt(out, op.path, op.value, false);
        break;
      case "replace":
        out = addAt(out, op.path, op.value, true);
        break;
      case "remove":
        out = removeAt(out, op.path);
        break;
      case "move": {
        const v = getAt(out, from);
        out = addAt(removeAt(out, from), op.path, v, false);
        break;
      }
      case "copy":
        out = addAt(out, op.path, getAt(out, from), false);
        break;
      case "test":
        if (JSON.stringify(getAt(out, op.path)) !== JSON.stringify(op.value)) {
          throw new ApiError("Invalid", `JSON patch: test at "${op.path}" failed`);
        }
        break;
      default:
        throw new ApiError("BadRequest", `JSON patch: unknown op ${JSON.stringify(op.op)}`);
    }
  }
  return out;
}

/** List fields merged by a key (patchMergeKey) in the built-in types; `ports` depends on the element. */
const MERGE_KEYS: Record<string, string> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  imagePullSecrets: "name",
  hostAliases: "ip",
  conditions: "type",
  ownerReferences: "uid",
  topologySpreadConstraints: "topologyKey",
  resourceClaims: "name",
};

/** Primitive lists merged as sets (patchStrategy "merge"). */
const MERGED_PRIMITIVE_LISTS = new Set(["finalizers"]);

function mergeKeyOf(field: string, items: unknown[]): string | undefined {
  if (field === "ports") {
    return items.some((i) => isObject(i) && "containerPort" in i) ? "containerPort" : "port";
  }
  return MERGE_KEYS[field];
}

function mergeList(field: string, target: unknown, patch: unknown[]): unknown[] {
  const base = Array.isArray(target) ? clone(target) : [];
  if (MERGED_PRIMITIVE_LISTS.has(field)) return [...base, ...patch.filter((p) => !base.includes(p))];
  const key = mergeKeyOf(field, [...base, ...patch]);
  if (!key || !patch.every(isObject)) return patch.filter((p) => !(isObject(p) && p.$patch !== undefined));
  const out = base.filter(isObject);
  for (const item of patch as KubeObject[]) {
    if (item.$patch === "replace") return patch.filter((p) => isObject(p) && p.$patch === undefined);
    const i = out.findIndex((o) => o[key] === item[key]);
    if (item.$patch === "delete") {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = strategicMerge(out[i], item) as KubeObject;
    else out.push(strategicMerge({}, item) as KubeObject);
  }
  return out;
}

/** A strategic merge patch applied to a copy of `target` (see the module doc for what is supported). */
export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  if (patch.$patch === "replace") {
    const rest = clone(patch);
    delete rest.$patch;
    return rest;
  }
  if (patch.$patch === "delete") return undefined;
  let out: KubeObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch" || k === "$retainKeys" || k.startsWith("$setElementOrder/")) continue;
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const field = k.slice("$deleteFromPrimitiveList/".length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(k, out[k], v);
    else {
      const merged = strategicMerge(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys);
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)));
  }
  return out;
}
