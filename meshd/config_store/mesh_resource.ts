/**
 * Validated resources typed by kind: the decode boundary between the config store and everything
 * after it. `validateText` (shared) has checked each document against the schema of its kind, and
 * the types in shared/api are generated from those same schemas, so a resource is narrowed once
 * here, where it enters meshd; code that tests `kind` then reads `spec` as that kind's type, without
 * a cast where it is used.
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
  ValidResource,
  VirtualServiceSpec,
  WorkloadEntrySpec,
  WorkloadGroupSpec,
} from "../../shared/mod.ts";
import { isSecretDocument, KIND_NAMES } from "../../shared/mod.ts";

/** The spec of each mesh kind, as its schema (shared/api/schemas) defines it. */
export interface SpecByKind {
  PeerAuthentication: PeerAuthenticationSpec;
  RequestAuthentication: RequestAuthenticationSpec;
  AuthorizationPolicy: AuthorizationPolicySpec;
  ServiceEntry: ServiceEntrySpec;
  WorkloadEntry: WorkloadEntrySpec;
  WorkloadGroup: WorkloadGroupSpec;
  Gateway: GatewaySpec;
  VirtualService: VirtualServiceSpec;
}

/** The kinds with a spec. */
export type SpecKind = keyof SpecByKind;

/** Every kind the config store keeps: the mesh kinds, and Kubernetes Secrets (gateway credentials). */
export type MeshKind = SpecKind | "Secret";

/** A resource of a mesh kind: `kind` tells the type of `spec`. */
export type SpecResource = {
  [K in SpecKind]: { apiVersion: string; kind: K; metadata: ObjectMeta; spec: SpecByKind[K] };
}[SpecKind];

/**
 * A Kubernetes Secret (`apiVersion: v1`). Its fields (`type`, `data`, `stringData`) are read by
 * shared's parseTlsSecret, which validated them.
 */
export interface SecretResource {
  apiVersion: "v1";
  kind: "Secret";
  metadata: ObjectMeta;
  readonly [field: string]: unknown;
}

/** A validated resource, typed by kind. */
export type MeshResource = SpecResource | SecretResource;

const SPEC_KINDS: ReadonlySet<string> = new Set(KIND_NAMES);

/**
 * Narrows a resource that validateText accepted to its kind's type. The check is the validator's:
 * this only confirms that the kind is one it validates, so a new kind in shared cannot slip through
 * untyped.
 *
 * @throws Error naming the kind when it is neither a mesh kind nor a Secret
 */
export function meshResourceOf(resource: ValidResource["resource"]): MeshResource {
  if (SPEC_KINDS.has(resource.kind) || isSecretDocument(resource.apiVersion, resource.kind)) {
    // The one narrowing of this boundary: validateText checked the document against this kind's
    // schema, whose generated type is the member of MeshResource that `kind` selects.
    return resource as MeshResource;
  }
  throw new Error(`${resource.kind} ${resource.metadata.name}: not a kind the config store keeps`);
}
