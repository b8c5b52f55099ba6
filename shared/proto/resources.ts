/**
 * The mesh's own xDS resource types (shared/proto/mesh/v1/*.proto): their type URLs, and encoding
 * to and from the bytes of a `google.protobuf.Any` as ADS carries them. meshd encodes, the proxy
 * decodes, with the same descriptors.
 *
 * @module
 */
import protobuf from "protobufjs";
import { MESH_PROTO_DESCRIPTOR } from "./descriptor.gen.ts";

/** Resource type names, by short name. */
export const RESOURCE_TYPES: {
  readonly workload: "mesh.v1.Workload";
  readonly service: "mesh.v1.Service";
  readonly authorization: "mesh.v1.Authorization";
  readonly jwtPolicy: "mesh.v1.JwtPolicy";
  readonly routeConfiguration: "mesh.v1.RouteConfiguration";
  readonly tlsCredential: "mesh.v1.TlsCredential";
} = {
  workload: "mesh.v1.Workload",
  service: "mesh.v1.Service",
  authorization: "mesh.v1.Authorization",
  jwtPolicy: "mesh.v1.JwtPolicy",
  routeConfiguration: "mesh.v1.RouteConfiguration",
  tlsCredential: "mesh.v1.TlsCredential",
};

/** One of the resource type names. */
export type ResourceTypeName = typeof RESOURCE_TYPES[keyof typeof RESOURCE_TYPES];

/** The type URL of a resource type, as in `google.protobuf.Any.type_url` and xDS requests. */
export function typeUrlOf(type: ResourceTypeName): string {
  return `type.googleapis.com/${type}`;
}

const root = protobuf.Root.fromJSON(MESH_PROTO_DESCRIPTOR as protobuf.INamespace);
const types = new Map<string, protobuf.Type>(
  Object.values(RESOURCE_TYPES).map((name) => [name, root.lookupType(name)]),
);

function typeOf(name: ResourceTypeName): protobuf.Type {
  const t = types.get(name);
  if (!t) throw new Error(`unknown resource type ${name}`);
  return t;
}

/**
 * Encodes a resource, given as a plain object with the proto's field names in camelCase
 * (`serviceAccount`, `inboundMtls`).
 *
 * @throws Error naming the type and field when the object does not fit the message
 */
export function encodeResource(type: ResourceTypeName, value: Record<string, unknown>): Uint8Array {
  const t = typeOf(type);
  // protobufjs drops fields it does not know without a word; a typo would silently lose config.
  const unknown = unknownField(t, value, "");
  if (unknown) throw new Error(`${type}: unknown field ${unknown}`);
  let message: protobuf.Message;
  try {
    // fromObject turns enum names into numbers, which verify() alone would reject.
    message = t.fromObject(value);
  } catch (e) {
    throw new Error(`${type}: ${(e as Error).message.replace(/^\.?[\w.]+\./, "")}`);
  }
  const problem = t.verify(message);
  if (problem) throw new Error(`${type}: ${problem}`);
  return t.encode(message).finish();
}

function unknownField(t: protobuf.Type, value: unknown, at: string): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  for (const [key, v] of Object.entries(value)) {
    const field = t.fields[key];
    if (!field) return `${at}${key}`;
    field.resolve();
    if (!(field.resolvedType instanceof protobuf.Type)) continue;
    const items = field.map ? Object.values(v ?? {}) : field.repeated && Array.isArray(v) ? v : [v];
    for (const [i, item] of items.entries()) {
      const where = field.repeated || field.map ? `${at}${key}[${i}].` : `${at}${key}.`;
      const found = unknownField(field.resolvedType, item, where);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Decodes resource bytes to a plain object: enums as their names, 64-bit integers as numbers, and
 * empty repeated and map fields present as [] and {}.
 *
 * @throws Error when the bytes are not a valid message of that type
 */
export function decodeResource(type: ResourceTypeName, bytes: Uint8Array): Record<string, unknown> {
  const t = typeOf(type);
  return t.toObject(t.decode(bytes), {
    enums: String,
    longs: Number,
    arrays: true,
    objects: true,
    defaults: true,
  });
}
