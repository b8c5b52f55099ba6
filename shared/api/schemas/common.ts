/**
 * Schema pieces shared by every mesh resource kind: the Kubernetes object envelope, workload
 * selectors and enum helpers. Each schema is a TypeBox schema, which is at once a JSON Schema
 * (the source of the CRD OpenAPI schemas in deploy/crds), a TypeScript type (via `Static`) and a
 * runtime validator.
 *
 * @module
 */
import {
  CloneType,
  type Static,
  type TLiteral,
  type TObject,
  type TOptional,
  type TSchema,
  type TString,
  type TUnion,
  type TUnknown,
  Type,
} from "@sinclair/typebox";

/** Options that make an object schema reject fields it does not name (Istio's protos are closed). */
export const closed = { additionalProperties: false } as const;

/**
 * A string enum as a union of literals, so that TypeScript narrows it and the error names the values.
 *
 * @param values the allowed strings, in the order shown in error messages and CRDs
 * @param description shown in the CRD schema
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  description: string,
): TUnion<TLiteral<T[number]>[]> {
  return Type.Union(values.map((v) => Type.Literal(v)), { description });
}

/** A list of strings, as Istio's `repeated string`. */
export function StringList(
  description: string,
): ReturnType<typeof Type.Array<ReturnType<typeof Type.String>>> {
  return Type.Array(Type.String(), { description });
}

/** A map from string to string, as Istio's `map<string, string>` (labels, matchLabels). */
export const StringMap = Type.Record(Type.String(), Type.String());
/** A string-to-string map, such as labels or matchLabels. */
export type StringMap = Static<typeof StringMap>;

/** istio.type.v1beta1.WorkloadSelector: `matchLabels` picks workloads in the policy's namespace. */
export const WorkloadSelector = Type.Object({
  matchLabels: Type.Optional(Type.Record(Type.String(), Type.String(), {
    description: "Labels a workload must carry, all of them, to be selected",
  })),
}, {
  ...closed,
  title: "WorkloadSelector",
  description: "Workloads the resource applies to; absent means every workload in scope",
});
/** A workload selector. */
export type WorkloadSelector = Static<typeof WorkloadSelector>;

/** istio.type.v1beta1.PolicyTargetReference (Kubernetes Gateway API attachment). */
export const PolicyTargetReference = Type.Object({
  group: Type.Optional(
    Type.String({ description: "API group of the target, e.g. gateway.networking.k8s.io" }),
  ),
  kind: Type.String({ description: "Kind of the target, e.g. Gateway or Service" }),
  name: Type.String({ description: "Name of the target resource" }),
  namespace: Type.Optional(
    Type.String({ description: "Namespace of the target; only the policy's own. Default: the policy's" }),
  ),
}, {
  ...closed,
  title: "PolicyTargetReference",
  description: "Gateway API attachment; not supported by this mesh",
});

/**
 * The subset of Kubernetes ObjectMeta a mesh resource may carry. Server-set fields are accepted so
 * that `kubectl get -o yaml` output validates; they do not change meaning, except creationTimestamp,
 * which orders policies of equal scope (oldest wins).
 */
export const ObjectMeta = Type.Object({
  name: Type.String({ description: "Resource name, a DNS-1123 subdomain" }),
  namespace: Type.Optional(Type.String({ description: "Namespace; determines scope. Default: default" })),
  labels: Type.Optional(CloneType(StringMap, { description: "Labels, matched by label selectors" })),
  annotations: Type.Optional(
    CloneType(StringMap, { description: "Free-form annotations; do not change the resource's meaning" }),
  ),
  creationTimestamp: Type.Optional(Type.String({
    description: "RFC 3339 time; orders policies of one scope",
    pattern:
      "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
  })),
  uid: Type.Optional(Type.String({ description: "Server-set unique ID of the object; ignored" })),
  resourceVersion: Type.Optional(
    Type.String({ description: "Server-set version, for optimistic concurrency; ignored" }),
  ),
  generation: Type.Optional(Type.Integer({ description: "Server-set count of spec changes; ignored" })),
  generateName: Type.Optional(
    Type.String({ description: "Prefix of a server-generated name; ignored, as name is required" }),
  ),
  finalizers: Type.Optional(
    Type.Array(Type.String(), { description: "Keys that hold off deletion until removed; ignored" }),
  ),
  ownerReferences: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: "Objects this one belongs to, for garbage collection; ignored",
  })),
  managedFields: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: "Server-side apply field ownership; ignored",
  })),
}, {
  ...closed,
  title: "ObjectMeta",
  description: "Kubernetes metadata: name and namespace place the resource; server-set fields are ignored",
});
/** Kubernetes object metadata as accepted here. */
export type ObjectMeta = Static<typeof ObjectMeta>;

/**
 * The envelope of a resource whose `spec` has the given schema. `status` is accepted and ignored.
 *
 * @param title the kind, which names the generated TypeScript interface
 * @param spec the schema of `spec`
 * @param description what a resource of this kind configures, shown on the generated interface
 */
export function ResourceEnvelope<S extends TSchema>(title: string, spec: S, description: string): TObject<{
  apiVersion: TString;
  kind: TString;
  metadata: typeof ObjectMeta;
  spec: S;
  status: TOptional<TUnknown>;
}> {
  return Type.Object({
    apiVersion: Type.String({
      description: "security.mesh.io/v1 or networking.mesh.io/v1, or Istio's group",
    }),
    kind: Type.String({ description: `The kind: ${title}` }),
    metadata: ObjectMeta,
    spec,
    status: Type.Optional(Type.Unknown({ description: "Written by the server; accepted and ignored" })),
  }, { ...closed, title, description });
}
