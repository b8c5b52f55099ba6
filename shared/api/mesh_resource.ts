/**
 * Resources typed by kind: what {@link validateText} returns for each valid document. The types of
 * shared/api are generated from the same schemas the validator checks, so `kind` tells the type of
 * `spec`: code that tests `kind` reads `spec` as that kind's type, without a cast where it is used.
 *
 * @module
 */
import type {
  AuthorizationPolicySpec,
  GatewaySpec,
  ObjectMeta,
  PeerAuthenticationSpec,
  RequestAuthenticationSpec,
  ServiceEntrySpec,
  VirtualServiceSpec,
  WorkloadEntrySpec,
  WorkloadGroupSpec,
} from "./types.gen.ts";

/** The spec of each mesh kind, as its schema (shared/api/schemas) defines it. */
export interface SpecByKind {
  /** security.mesh.io/v1 PeerAuthentication. */
  PeerAuthentication: PeerAuthenticationSpec;
  /** security.mesh.io/v1 RequestAuthentication. */
  RequestAuthentication: RequestAuthenticationSpec;
  /** security.mesh.io/v1 AuthorizationPolicy. */
  AuthorizationPolicy: AuthorizationPolicySpec;
  /** networking.mesh.io/v1 ServiceEntry. */
  ServiceEntry: ServiceEntrySpec;
  /** networking.mesh.io/v1 WorkloadEntry. */
  WorkloadEntry: WorkloadEntrySpec;
  /** networking.mesh.io/v1 WorkloadGroup. */
  WorkloadGroup: WorkloadGroupSpec;
  /** networking.mesh.io/v1 Gateway. */
  Gateway: GatewaySpec;
  /** networking.mesh.io/v1 VirtualService. */
  VirtualService: VirtualServiceSpec;
}

/** The kinds with a spec (every kind of {@link KINDS}). */
export type SpecKind = keyof SpecByKind;

/** Every kind validation accepts: the mesh kinds, and Kubernetes Secrets (gateway credentials). */
export type MeshKind = SpecKind | "Secret";

/** A resource of the mesh kind `K`; `apiVersion` is one of its accepted versions (Istio's included). */
export interface ResourceOf<K extends SpecKind> {
  /** The apiVersion as written, e.g. `security.mesh.io/v1` or `security.istio.io/v1beta1`. */
  apiVersion: string;
  /** The kind. */
  kind: K;
  /** Name, namespace (filled in with the default namespace when the document names none), labels. */
  metadata: ObjectMeta;
  /** The kind's spec, schema-valid. */
  spec: SpecByKind[K];
}

/** A resource of a mesh kind: `kind` tells the type of `spec` (a union discriminated on `kind`). */
export type SpecResource = { [K in SpecKind]: ResourceOf<K> }[SpecKind];

/**
 * A Kubernetes Secret (`apiVersion: v1`). Its other fields (`type`, `data`, `stringData`) were
 * validated by {@link parseTlsSecret}, which is also what reads them.
 */
export interface SecretResource {
  /** Always `v1`. */
  apiVersion: "v1";
  /** Always `Secret`. */
  kind: "Secret";
  /** Name and namespace. */
  metadata: ObjectMeta;
  /** `type`, `data`, `stringData`, as written. */
  readonly [field: string]: unknown;
}

/** A validated resource, typed by kind. */
export type MeshResource = SpecResource | SecretResource;
