/**
 * The resource types this server serves: the built-in table (core/v1, apps/v1, discovery.k8s.io/v1,
 * coordination.k8s.io/v1, admissionregistration.k8s.io/v1, apiextensions.k8s.io/v1,
 * authentication.k8s.io/v1) and the types a CustomResourceDefinition adds (one per served version).
 * Source: the Kubernetes API reference (v1.32) for names, scopes, short names and subresources.
 *
 * @module
 */
import { isObject, type KubeObject, str } from "./types.ts";

/** One served group/version/resource. */
export interface ResourceType {
  group: string;
  version: string;
  /** Plural lower-case name used in URLs, e.g. "pods". */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames: string[];
  /** Subresources served: "status" (object status), "token" (TokenRequest on serviceaccounts). */
  subresources: string[];
  /** Create-only types that are not stored (TokenReview): only "create" is served. */
  createOnly?: boolean;
  categories?: string[];
}

/** The verbs of a stored type, as discovery lists them. */
export const STORED_VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

/** "group/version", or "version" for the core group (the `apiVersion` of the type's objects). */
export function apiVersionOf(t: { group: string; version: string }): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

function builtin(
  group: string,
  version: string,
  kind: string,
  resource: string,
  namespaced: boolean,
  shortNames: string[] = [],
  subresources: string[] = [],
): ResourceType {
  return {
    group,
    version,
    kind,
    resource,
    singular: kind.toLowerCase(),
    namespaced,
    shortNames,
    subresources,
  };
}

/** The built-in types. Pods, Services, Namespaces and Deployments have a status subresource as in Kubernetes. */
export const BUILTIN_TYPES: ResourceType[] = [
  builtin("", "v1", "Namespace", "namespaces", false, ["ns"], ["status"]),
  builtin("", "v1", "Pod", "pods", true, ["po"], ["status"]),
  builtin("", "v1", "Service", "services", true, ["svc"], ["status"]),
  builtin("", "v1", "ServiceAccount", "serviceaccounts", true, ["sa"], ["token"]),
  builtin("", "v1", "Secret", "secrets", true),
  builtin("", "v1", "ConfigMap", "configmaps", true, ["cm"]),
  builtin("", "v1", "Endpoints", "endpoints", true, ["ep"]),
  builtin("", "v1", "Event", "events", true, ["ev"]),
  builtin("", "v1", "Node", "nodes", false, ["no"], ["status"]),
  builtin("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true),
  builtin("apps", "v1", "Deployment", "deployments", true, ["deploy"], ["status"]),
  builtin("apps", "v1", "ReplicaSet", "replicasets", true, ["rs"], ["status"]),
  builtin("apps", "v1", "DaemonSet", "daemonsets", true, ["ds"], ["status"]),
  builtin("apps", "v1", "StatefulSet", "statefulsets", true, ["sts"], ["status"]),
  builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
  builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, ["pdb"], ["status"]),
  builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
  builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
  builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
  builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
  builtin(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    false,
  ),
  builtin(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    false,
  ),
  builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, [
    "crd",
    "crds",
  ], [
    "status",
  ]),
  { ...builtin("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false), createOnly: true },
];

/**
 * The types a CustomResourceDefinition object declares: one per `spec.versions[]` entry with
 * `served: true`, with the status subresource when `subresources.status` is present.
 *
 * @throws Error naming the field when `spec.group`, `spec.names.plural`/`kind` or `spec.scope` is missing
 */
export function typesOfCrd(crd: KubeObject): ResourceType[] {
  const spec = isObject(crd.spec) ? crd.spec : {};
  const names = isObject(spec.names) ? spec.names : {};
  const group = str(spec, "group");
  const plural = str(names, "plural");
  const kind = str(names, "kind");
  const scope = str(spec, "scope");
  if (!group) throw new Error("spec.group: Required value");
  if (!plural) throw new Error("spec.names.plural: Required value");
  if (!kind) throw new Error("spec.names.kind: Required value");
  if (scope !== "Namespaced" && scope !== "Cluster") {
    throw new Error(`spec.scope: Unsupported value: "${scope}": supported values: "Cluster", "Namespaced"`);
  }
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [];
  if (versions.length === 0) {
    throw new Error("spec.versions: Required value: must have exactly one version marked as storage version");
  }
  const shortNames = Array.isArray(names.shortNames)
    ? names.shortNames.filter((s) => typeof s === "string")
    : [];
  const categories = Array.isArray(names.categories)
    ? names.categories.filter((s) => typeof s === "string")
    : [];
  return versions.filter((v) => v.served !== false).map((v) => {
    const sub = isObject(v.subresources) ? v.subresources : {};
    return {
      group,
      version: str(v, "name"),
      resource: plural,
      singular: str(names, "singular") || kind.toLowerCase(),
      kind,
      namespaced: scope === "Namespaced",
      shortNames,
      categories,
      subresources: isObject(sub.status) ? ["status"] : [],
    };
  });
}
