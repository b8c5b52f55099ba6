/**
 * An offline check of Kubernetes objects against the API's schema as @kubernetes/client-node carries it:
 * its models are generated from the Kubernetes OpenAPI document (client 2.0 from Kubernetes 1.34), each
 * with an `attributeTypeMap` (every field's JSON name and type) and a `.d.ts` declaration whose
 * non-optional members are the schema's required fields; its API classes name each kind's create call
 * (`createNamespacedDeployment`, `createClusterRole`), which tells whether a group/version serves the
 * kind and whether the kind is namespaced.
 *
 * What it checks: apiVersion and kind are served; namespaced kinds carry metadata.namespace and
 * cluster-scoped kinds do not; no unknown field anywhere (a typo such as `containerport` is an error, as
 * `kubectl apply --validate=strict` makes it); each value's JSON type (string, integer, boolean, array,
 * map, object; IntOrString either); every required field is present. What it cannot: formats and
 * value rules the API server enforces in Go (DNS names, port ranges, enum values, immutable fields).
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** One schema error: where (a JSON path from the document's root) and why. */
export interface SchemaError {
  readonly path: string;
  readonly reason: string;
}

interface Attribute {
  readonly name: string;
  readonly baseName: string;
  readonly type: string;
}

const exported = k8s as unknown as Record<string, unknown>;
const modelsDir = join(
  dirname(createRequire(import.meta.url).resolve("@kubernetes/client-node/package.json")),
  "dist/gen/models",
);
const requiredCache = new Map<string, Set<string>>();

function attributes(model: string): readonly Attribute[] | undefined {
  const cls = exported[model] as { getAttributeTypeMap?: () => Attribute[] } | undefined;
  return cls?.getAttributeTypeMap?.();
}

/** The required members of a model: its `.d.ts` members declared without `?`. */
function required(model: string): Set<string> {
  let names = requiredCache.get(model);
  if (names === undefined) {
    const text = Deno.readTextFileSync(join(modelsDir, `${model}.d.ts`));
    names = new Set([...text.matchAll(/^\s+'([^']+)': /gm)].map((m) => m[1]));
    requiredCache.set(model, names);
  }
  return names;
}

/** The client-node API class of a group/version: `apps/v1` → AppsV1Api, `v1` → CoreV1Api. */
function apiClass(apiVersion: string): { cls: string; version: string } {
  const slash = apiVersion.lastIndexOf("/");
  const group = slash < 0 ? "core" : apiVersion.slice(0, slash).replace(/\.k8s\.io$/, "");
  const version = apiVersion.slice(slash + 1);
  const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
  return { cls: `${group.split(".").map(cap).join("")}${cap(version)}Api`, version: cap(version) };
}

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  return typeof value;
}

function checkValue(value: unknown, type: string, path: string, errors: SchemaError[]): void {
  const want = (ok: boolean, what: string): void => {
    if (!ok) errors.push({ path, reason: `must be ${what}; got ${typeOf(value)}` });
  };
  if (type === "any" || type === "object") return;
  if (type === "string" || type === "Date") return want(typeof value === "string", "a string");
  if (type === "number") return want(Number.isInteger(value), "an integer");
  if (type === "boolean") return want(typeof value === "boolean", "a boolean");
  if (type === "IntOrString") {
    return want(typeof value === "string" || Number.isInteger(value), "an integer or a string");
  }
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    want(Array.isArray(value), "a list");
    if (Array.isArray(value)) value.forEach((v, i) => checkValue(v, array[1], `${path}[${i}]`, errors));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    want(typeOf(value) === "object", "a map");
    if (typeOf(value) === "object") {
      for (const [k, v] of Object.entries(value as object)) checkValue(v, map[1], `${path}.${k}`, errors);
    }
    return;
  }
  checkObject(value, type, path, errors);
}

function checkObject(value: unknown, model: string, path: string, errors: SchemaError[]): void {
  const attrs = attributes(model);
  if (attrs === undefined) {
    errors.push({ path, reason: `no schema for type ${model}` });
    return;
  }
  if (typeOf(value) !== "object") {
    errors.push({ path, reason: `must be an object (${model}); got ${typeOf(value)}` });
    return;
  }
  const fields = new Map(attrs.map((a) => [a.baseName, a]));
  const obj = value as Record<string, unknown>;
  for (const [key, v] of Object.entries(obj)) {
    const attr = fields.get(key);
    const at = path === "" ? key : `${path}.${key}`;
    if (attr === undefined) errors.push({ path: at, reason: `unknown field (not in ${model})` });
    else if (v !== null) checkValue(v, attr.type, at, errors);
  }
  for (const name of required(model)) {
    const attr = attrs.find((a) => a.name === name);
    if (attr !== undefined && !(attr.baseName in obj)) {
      errors.push({ path: path === "" ? attr.baseName : `${path}.${attr.baseName}`, reason: "required" });
    }
  }
}

/**
 * Checks one Kubernetes object (a parsed YAML document) against client-node's models.
 *
 * @returns every error found, none when the object conforms
 */
export function checkKubernetesObject(doc: Record<string, unknown>): SchemaError[] {
  const { apiVersion, kind } = doc;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    return [{ path: "", reason: "apiVersion and kind must be strings" }];
  }
  const api = apiClass(apiVersion);
  const proto = (exported[api.cls] as { prototype?: Record<string, unknown> } | undefined)?.prototype;
  if (proto === undefined) return [{ path: "apiVersion", reason: `${apiVersion} is not a served API` }];
  const namespaced = typeof proto[`createNamespaced${kind}`] === "function";
  if (!namespaced && typeof proto[`create${kind}`] !== "function") {
    return [{ path: "kind", reason: `${apiVersion} serves no kind ${kind}` }];
  }
  const errors: SchemaError[] = [];
  checkObject(doc, `${api.version}${kind}`, "", errors);
  const ns = (doc.metadata as Record<string, unknown> | undefined)?.namespace;
  if (namespaced && typeof ns !== "string") {
    errors.push({ path: "metadata.namespace", reason: `${kind} is namespaced: name its namespace` });
  }
  if (!namespaced && ns !== undefined) {
    errors.push({ path: "metadata.namespace", reason: `${kind} is cluster-scoped: it has no namespace` });
  }
  return errors;
}
