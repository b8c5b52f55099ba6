/**
 * google.protobuf.Struct, as @grpc/proto-loader decodes and encodes it (`{fields: {k: {kind,
 * stringValue, ...}}}`), to and from plain JSON. Node metadata travels in this form.
 *
 * @module
 */

// deno-lint-ignore no-explicit-any
type Message = Record<string, any>;

/** A Struct message to plain JSON. */
export function structToJson(struct: Message | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(struct?.fields ?? {})) out[k] = valueToJson(v as Message);
  return out;
}

function valueToJson(v: Message): unknown {
  // proto-loader names the set member in `kind` (oneofs: true); a hand-built Value only has the member.
  const kind = v?.kind ?? Object.keys(v ?? {}).find((k) => k.endsWith("Value"));
  switch (kind) {
    case "nullValue":
      return null;
    case "numberValue":
      return v.numberValue;
    case "stringValue":
      return v.stringValue;
    case "boolValue":
      return v.boolValue;
    case "structValue":
      return structToJson(v.structValue);
    case "listValue":
      return (v.listValue?.values ?? []).map(valueToJson);
    default:
      return undefined;
  }
}

/** Plain JSON to a Struct message. */
export function jsonToStruct(json: Record<string, unknown>): Message {
  return { fields: Object.fromEntries(Object.entries(json).map(([k, v]) => [k, jsonToValue(v)])) };
}

function jsonToValue(v: unknown): Message {
  if (v === null || v === undefined) return { nullValue: "NULL_VALUE" };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsonToValue) } };
  return { structValue: jsonToStruct(v as Record<string, unknown>) };
}
