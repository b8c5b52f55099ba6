/**
 * Label and field selectors of list and watch requests (`labelSelector=`, `fieldSelector=`), parsed as
 * k8s.io/apimachinery/pkg/labels and pkg/fields do: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
 * `k notin (a,b)`, `k` (exists) and `!k` (does not exist); fields support `=`, `==` and `!=` on a dotted
 * path (`metadata.name`, `metadata.namespace`, `spec.nodeName`, `status.phase`, ...).
 *
 * @module
 */
import { ApiError, isObject, type KubeObject, stringMap } from "./types.ts";

/** A compiled selector: true when the object matches. */
export type Selector = (obj: KubeObject) => boolean;

interface Requirement {
  key: string;
  op: "=" | "!=" | "in" | "notin" | "exists" | "!exists";
  values: string[];
}

/** Splits at commas that are not inside parentheses. */
function splitTop(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

const SET_RE = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/;
const EQ_RE = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/;
const KEY_RE = /^(!?)([A-Za-z0-9][-A-Za-z0-9_./]*)$/;

function parseRequirement(part: string, what: string): Requirement {
  let m = SET_RE.exec(part);
  if (m) {
    const values = m[3].split(",").map((v) => v.trim()).filter((v) => v !== "");
    return { key: m[1], op: m[2] as "in" | "notin", values };
  }
  m = EQ_RE.exec(part);
  if (m) return { key: m[1], op: m[2] === "!=" ? "!=" : "=", values: [m[3]] };
  m = KEY_RE.exec(part);
  if (m) return { key: m[2], op: m[1] ? "!exists" : "exists", values: [] };
  throw new ApiError("BadRequest", `unable to parse requirement: ${what} "${part}"`);
}

function test(r: Requirement, value: string | undefined): boolean {
  switch (r.op) {
    case "=":
      return value === r.values[0];
    case "!=":
      return value !== r.values[0];
    case "in":
      return value !== undefined && r.values.includes(value);
    case "notin":
      return value === undefined || !r.values.includes(value);
    case "exists":
      return value !== undefined;
    case "!exists":
      return value === undefined;
  }
}

/**
 * Compiles a label selector string; "" or undefined matches everything.
 *
 * @throws ApiError BadRequest naming the requirement that does not parse
 */
export function parseLabelSelector(s: string | null | undefined): Selector {
  if (!s) return () => true;
  const reqs = splitTop(s).map((p) => parseRequirement(p, "label selector"));
  return (obj) => {
    const labels = stringMap(obj, "labels");
    return reqs.every((r) => test(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined));
  };
}

/** The string form of the value at a dotted path, or undefined; a field selector compares strings. */
export function fieldValue(obj: KubeObject, path: string): string | undefined {
  let cur: unknown = obj;
  for (const seg of path.split(".")) {
    if (!isObject(cur)) return undefined;
    cur = cur[seg];
  }
  if (cur === undefined || cur === null) return undefined;
  return typeof cur === "object" ? JSON.stringify(cur) : String(cur);
}

/**
 * Compiles a field selector string (`=`, `==`, `!=` only, as Kubernetes allows); a missing field reads as "".
 *
 * @throws ApiError BadRequest for set-based or malformed requirements
 */
export function parseFieldSelector(s: string | null | undefined): Selector {
  if (!s) return () => true;
  const reqs = splitTop(s).map((p) => {
    const m = EQ_RE.exec(p);
    if (!m) throw new ApiError("BadRequest", `invalid selector: '${s}'; can't understand '${p}'`);
    return { key: m[1], op: m[2] === "!=" ? "!=" as const : "=" as const, values: [m[3]] };
  });
  return (obj) => reqs.every((r) => test(r, fieldValue(obj, r.key) ?? ""));
}
