/**
 * The mesh's resource kinds: their TypeScript types (generated from the schemas), the kind
 * registry with Istio's API-group aliases, and single-resource validation.
 *
 * @module
 */
export * from "./types.gen.ts";
export {
  ACCEPTED_API_VERSIONS,
  groupOf,
  KIND_NAMES,
  type KindLookup,
  KINDS,
  lookupKind,
  MESH_GROUPS,
} from "./kinds.ts";
export {
  DEFAULT_ROOT_NAMESPACE,
  type FieldPath,
  type Finding,
  formatFieldPath,
  type RuleContext,
  type Severity,
} from "./finding.ts";
export type { ApiGroupName, KindDefinition, KindSchema } from "./schemas/kind_definition.ts";
export { validateResource, type ValidateResourceOptions } from "./validate_resource.ts";
export type {
  MeshKind,
  MeshResource,
  ResourceOf,
  SecretResource,
  SpecByKind,
  SpecKind,
  SpecResource,
} from "./mesh_resource.ts";
export { MTLS_MODES } from "./schemas/peer_authentication.ts";
export {
  AUTHORIZATION_ACTIONS,
  AUTHORIZATION_OPERATION_FIELDS,
  AUTHORIZATION_SOURCE_FIELDS,
} from "./schemas/authorization_policy.ts";
export { BRACKETED_CONDITION_KEYS, PLAIN_CONDITION_KEYS } from "./schemas/authorization_conditions.ts";
export { parseDuration } from "./schemas/duration.ts";
