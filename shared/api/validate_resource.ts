/**
 * Validates one parsed resource against its kind: the schema first (every structural error, each
 * with its field path), then the kind's semantic rules.
 *
 * @module
 */
import type { TSchema } from "@sinclair/typebox";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { DEFAULT_ROOT_NAMESPACE, error, type FieldPath, type Finding, type RuleContext } from "./finding.ts";
import type { KindDefinition } from "./schemas/kind_definition.ts";

/** Options of {@link validateResource}. */
export interface ValidateResourceOptions {
  /** Root namespace; default `mesh-system`. */
  rootNamespace?: string;
}

/**
 * Validates a resource (a plain object as parsed from YAML or JSON) against its kind definition.
 *
 * @returns every finding, schema errors first; the resource is valid when none is an error
 */
export function validateResource(
  def: KindDefinition,
  resource: unknown,
  options: ValidateResourceOptions = {},
): Finding[] {
  const ctx: RuleContext = { rootNamespace: options.rootNamespace ?? DEFAULT_ROOT_NAMESPACE };
  // KindSchema is the public face of a TypeBox schema (defineKind takes only TSchema), so that
  // shared's published types do not carry TypeBox's; here it goes back to TypeBox.
  const findings = schemaFindings(def.schema as TSchema, resource);
  const hadSchemaErrors = findings.length > 0;
  try {
    findings.push(...def.rules(resource, ctx));
  } catch (e) {
    // Rules are written for schema-valid input; on input the schema already rejected they may trip
    // over a wrong type, and the schema errors already say what is wrong.
    if (!hadSchemaErrors) throw e;
  }
  return findings;
}

/** Turns TypeBox's errors into findings with readable reasons, one per distinct field and reason. */
export function schemaFindings(schema: TSchema, value: unknown): Finding[] {
  const out: Finding[] = [];
  const seen = new Set<string>();
  const missing = new Set<string>();
  for (const e of Value.Errors(schema, value)) {
    // TypeBox reports a missing required field twice: as missing, and as a value of the wrong type.
    if (e.type === ValueErrorType.ObjectRequiredProperty) missing.add(e.path);
    else if (e.value === undefined && missing.has(e.path)) continue;
    const path = toFieldPath(parsePointer(e.path), value);
    const message = describe(e);
    const key = `${e.path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(error(path, message));
  }
  return out;
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** Makes list indices numbers, as rules write them; map keys that look like numbers stay strings. */
function toFieldPath(segments: string[], root: unknown): FieldPath {
  let at: unknown = root;
  return segments.map((seg) => {
    const inList = Array.isArray(at);
    at = at !== null && typeof at === "object" ? Reflect.get(at, seg) : undefined;
    return inList ? Number(seg) : seg;
  });
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a map";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  return `${typeof v} ${String(v)}`;
}

function describe(e: ValueError): string {
  // TypeBox's union schemas list their members in `anyOf`; a union of literals is an enumeration.
  const members: unknown = e.schema.anyOf;
  switch (e.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return `unknown field "${parsePointer(e.path).at(-1)}"`;
    case ValueErrorType.ObjectRequiredProperty:
      return "required field is missing";
    case ValueErrorType.Union:
      if (
        Array.isArray(members) && members.every((a) => typeof a === "object" && a !== null && "const" in a)
      ) {
        return `must be one of ${members.map((a) => String(a.const)).join(", ")}; got ${typeName(e.value)}`;
      }
      return `${e.message}; got ${typeName(e.value)}`;
    case ValueErrorType.String:
      return `expected a string, got ${typeName(e.value)}`;
    case ValueErrorType.Boolean:
      return `expected true or false, got ${typeName(e.value)}`;
    case ValueErrorType.Integer:
      return `expected an integer, got ${typeName(e.value)}`;
    case ValueErrorType.Number:
      return `expected a number, got ${typeName(e.value)}`;
    case ValueErrorType.Array:
      return `expected a list, got ${typeName(e.value)}`;
    case ValueErrorType.Object:
      return `expected a map, got ${typeName(e.value)}`;
    default:
      return `${e.message.toLowerCase()}; got ${typeName(e.value)}`;
  }
}
