/**
 * The registry of resource kinds and the API groups and versions that name them. The mesh's own
 * groups are `security.mesh.io/v1` and `networking.mesh.io/v1`; Istio's groups are accepted as
 * aliases so that existing Istio YAML applies unchanged.
 *
 * @module
 */
import type { KindDefinition } from "./schemas/kind_definition.ts";
import { authorizationPolicy } from "./schemas/authorization_policy.ts";
import { gateway } from "./schemas/gateway.ts";
import { serviceEntry } from "./schemas/service_entry.ts";
import { virtualService } from "./schemas/virtual_service.ts";
import { workloadEntry } from "./schemas/workload_entry.ts";
import { workloadGroup } from "./schemas/workload_group.ts";
import { peerAuthentication } from "./schemas/peer_authentication.ts";
import { requestAuthentication } from "./schemas/request_authentication.ts";

/** API group names of the mesh, by group. */
export const MESH_GROUPS: { readonly security: string; readonly networking: string } = {
  security: "security.mesh.io",
  networking: "networking.mesh.io",
};

/** Every accepted `apiVersion`, by group. The first of each list is the mesh's own, canonical one. */
export const ACCEPTED_API_VERSIONS: {
  readonly security: readonly string[];
  readonly networking: readonly string[];
} = {
  security: ["security.mesh.io/v1", "security.istio.io/v1", "security.istio.io/v1beta1"],
  // v1alpha3 is Istio's oldest networking version and still the most common in published YAML.
  networking: [
    "networking.mesh.io/v1",
    "networking.istio.io/v1",
    "networking.istio.io/v1beta1",
    "networking.istio.io/v1alpha3",
  ],
};

/** Every kind the mesh understands, in a stable order (security first). */
export const KINDS: readonly KindDefinition[] = [
  peerAuthentication,
  requestAuthentication,
  authorizationPolicy,
  serviceEntry,
  workloadEntry,
  workloadGroup,
  gateway,
  virtualService,
] as unknown as readonly KindDefinition[];

/** The names of all supported kinds. */
export const KIND_NAMES: readonly string[] = KINDS.map((k) => k.kind);

/** How an `apiVersion` and `kind` pair resolves. */
export type KindLookup =
  | { status: "ok"; definition: KindDefinition }
  /** A group of the mesh or of Istio, but a kind this mesh does not support (for example DestinationRule). */
  | { status: "unsupported-kind"; reason: string }
  /** A kind of this mesh with an apiVersion that is not accepted for it. */
  | { status: "bad-api-version"; reason: string }
  /** Another API group entirely (for example apps/v1 Deployment). */
  | { status: "foreign"; reason: string };

/** The mesh or Istio group of an apiVersion, if it is one. */
export function groupOf(apiVersion: string): KindDefinition["group"] | undefined {
  const group = apiVersion.split("/")[0];
  if (group === "security.mesh.io" || group === "security.istio.io") return "security";
  if (group === "networking.mesh.io" || group === "networking.istio.io") return "networking";
  return undefined;
}

/**
 * Resolves a document's `apiVersion` and `kind` to its definition.
 *
 * @returns `ok` with the definition, or why it does not resolve
 */
export function lookupKind(apiVersion: string, kind: string): KindLookup {
  const group = groupOf(apiVersion);
  const def = KINDS.find((k) => k.kind === kind);
  if (group === undefined) {
    if (def) {
      return {
        status: "bad-api-version",
        reason: `apiVersion "${apiVersion}" is not one of ${ACCEPTED_API_VERSIONS[def.group].join(", ")}`,
      };
    }
    return { status: "foreign", reason: `${apiVersion} ${kind} is not a mesh resource` };
  }
  if (!def || def.group !== group) {
    const inGroup = KINDS.filter((k) => k.group === group).map((k) => k.kind);
    const hint = def ? ` (${kind} belongs to ${MESH_GROUPS[def.group]})` : "";
    return {
      status: "unsupported-kind",
      reason: `kind "${kind}" is not supported in ${apiVersion.split("/")[0]}${hint}; supported kinds: ${
        inGroup.join(", ")
      }`,
    };
  }
  if (!ACCEPTED_API_VERSIONS[group].includes(apiVersion)) {
    return {
      status: "bad-api-version",
      reason: `apiVersion "${apiVersion}" is not one of ${ACCEPTED_API_VERSIONS[group].join(", ")}`,
    };
  }
  return { status: "ok", definition: def };
}
