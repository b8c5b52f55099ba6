/**
 * Turns TypeBox schemas into the two plain JSON Schema dialects the generators need: one for
 * json-schema-to-typescript (the public TypeScript interfaces) and Kubernetes' structural OpenAPI v3
 * (the CRDs). Shared object identity is preserved so that a schema used in several places becomes
 * one named interface.
 *
 * @module
 */
import type { TSchema } from "@sinclair/typebox";

type Json = Record<string, unknown>;
const RECORD_KEY = "^(.*)$";

/**
 * A copy of the schema with TypeBox's Record encoding (`patternProperties`) turned into
 * `additionalProperties`, and unions of literals into `enum`.
 *
 * @param flavour `typescript` keeps titles and closed objects; `kubernetes` drops what structural
 *   schemas forbid (titles, `additionalProperties: false`) and marks free-form values.
 */
export function toPlainJsonSchema(schema: TSchema, flavour: "typescript" | "kubernetes"): Json {
  const memo = new Map<unknown, Json>();
  const byTitle = new Map<string, Json>();
  const walk = (s: Json): Json => {
    // TypeBox's Optional() copies a schema, so identity alone would split one named type in two;
    // a title names one structure by convention (see shared/api/schemas/common.ts).
    const hit = memo.get(s) ?? (typeof s.title === "string" ? byTitle.get(s.title) : undefined);
    if (hit) return hit;
    const out: Json = {};
    memo.set(s, out);
    if (typeof s.title === "string") byTitle.set(s.title, out);
    for (const [k, v] of Object.entries(s)) {
      if (k === "patternProperties" || k === "anyOf" || k === "$id") continue;
      if (k === "title" && flavour === "kubernetes") continue;
      if (k === "additionalProperties" && v === false && flavour === "kubernetes") continue;
      if (k === "properties") {
        out.properties = Object.fromEntries(
          Object.entries(v as Json).map(([p, ps]) => [p, describedUse(walk(ps as Json), flavour)]),
        );
      } else if (k === "items" || (k === "additionalProperties" && typeof v === "object")) {
        out[k] = walk(v as Json);
      } else out[k] = v;
    }
    const pattern = (s.patternProperties as Json | undefined)?.[RECORD_KEY];
    if (pattern) {
      out.type = "object";
      out.additionalProperties = walk(pattern as Json);
    }
    const anyOf = s.anyOf as Json[] | undefined;
    if (anyOf?.every((a) => "const" in a)) {
      out.type = "string";
      out.enum = anyOf.map((a) => a.const);
    } else if (anyOf) out.anyOf = anyOf.map(walk);
    if (flavour === "kubernetes" && out.type === undefined && out.enum === undefined && !out.anyOf) {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    if (flavour === "kubernetes" && out.type === "object" && !out.properties && !out.additionalProperties) {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    return out;
  };
  return walk(schema as unknown as Json);
}

/**
 * json-schema-to-typescript writes a property's JSDoc only when the property's type is anonymous;
 * a property whose type is a named interface would be undocumented. Wrapping the named type in a
 * one-member `allOf` that carries the description keeps the type (`selector?: WorkloadSelector`)
 * and documents the property.
 */
function describedUse(s: Json, flavour: "typescript" | "kubernetes"): Json {
  if (flavour !== "typescript") return s;
  // A described `unknown` (no keyword but description) would otherwise become `{ [k: string]: unknown }`.
  if (Object.keys(s).every((k) => k === "description")) return { ...s, tsType: "unknown" };
  if (typeof s.title !== "string" || typeof s.description !== "string") return s;
  return { allOf: [s], description: s.description };
}
