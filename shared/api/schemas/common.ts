/**
 * Schema pieces shared by every mesh resource kind: the Kubernetes object envelope, workload
 * selectors and enum helpers. Each schema is a TypeBox schema, which is at once a JSON Schema
 * (the source of the CRD OpenAPI schemas in deploy/crds), a TypeScript type (via `Static`) and a
 * runtime validator.
 *
 * @module
 */
import {
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
  group: Type.Optional(Type.String()),
  kind: Type.String(),
  name: Type.String(),
  namespace: Type.Optional(Type.String()),
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
  labels: Type.Optional(StringMap),
  annotations: Type.Optional(StringMap),
  creationTimestamp: Type.Optional(Type.String({
    description: "RFC 3339 time; orders policies of one scope",
    pattern:
      "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
  })),
  uid: Type.Optional(Type.String()),
  resourceVersion: Type.Optional(Type.String()),
  generation: Type.Optional(Type.Integer()),
  generateName: Type.Optional(Type.String()),
  finalizers: Type.Optional(Type.Array(Type.String())),
  ownerReferences: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  managedFields: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
}, { ...closed, title: "ObjectMeta" });
/** Kubernetes object metadata as accepted here. */
export type ObjectMeta = Static<typeof ObjectMeta>;

/**
 * The envelope of a resource whose `spec` has the given schema. `status` is accepted and ignored.
 *
 * @param title the kind, which names the generated TypeScript interface
 */
export function ResourceEnvelope<S extends TSchema>(title: string, spec: S): TObject<{
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
    kind: Type.String(),
    metadata: ObjectMeta,
    spec,
    status: Type.Optional(Type.Unknown()),
  }, { ...closed, title });
}
