/**
 * Applying, pruning and deleting install objects through the Kubernetes API, as istioctl's installer
 * does (istio/istio operator/pkg/install): create-or-update, then prune what the same component and
 * revision installed before and no longer renders, found by the ownership labels (render.ts). The API
 * may have no server-side apply (the test API server of deploy/lab/kube_api has none), so an update is
 * a GET then a JSON merge patch of the whole rendered object (lists replace, as apply would).
 *
 * @module
 */
import { ApiError } from "../../shared/internal/kube/api_client.ts";
import type { KubeObject } from "./render.ts";
import { COMPONENT_LABEL, REV_LABEL } from "./render.ts";

/** What apply.ts needs of an API client (shared/internal/kube/api_client.ts's ApiClient). */
export interface KubeApi {
  json<T>(
    method: string,
    path: string,
    req?: { query?: Record<string, string>; body?: unknown; contentType?: string },
  ): Promise<T>;
}

/** A kind meshctl installs: where it lives in the API. */
interface KindInfo {
  plural: string;
  namespaced: boolean;
}

/** Every kind the manifests hold, by `apiVersion/kind`. */
export const INSTALL_KINDS: Record<string, KindInfo> = {
  "apiextensions.k8s.io/v1/CustomResourceDefinition": {
    plural: "customresourcedefinitions",
    namespaced: false,
  },
  "v1/Namespace": { plural: "namespaces", namespaced: false },
  "v1/ServiceAccount": { plural: "serviceaccounts", namespaced: true },
  "v1/ConfigMap": { plural: "configmaps", namespaced: true },
  "v1/Service": { plural: "services", namespaced: true },
  "rbac.authorization.k8s.io/v1/ClusterRole": { plural: "clusterroles", namespaced: false },
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": { plural: "clusterrolebindings", namespaced: false },
  "rbac.authorization.k8s.io/v1/Role": { plural: "roles", namespaced: true },
  "rbac.authorization.k8s.io/v1/RoleBinding": { plural: "rolebindings", namespaced: true },
  "apps/v1/Deployment": { plural: "deployments", namespaced: true },
  "policy/v1/PodDisruptionBudget": { plural: "poddisruptionbudgets", namespaced: true },
  "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": {
    plural: "mutatingwebhookconfigurations",
    namespaced: false,
  },
  "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": {
    plural: "validatingwebhookconfigurations",
    namespaced: false,
  },
  "networking.mesh.io/v1/WorkloadGroup": { plural: "workloadgroups", namespaced: true },
};

/** The collection path of `apiVersion/kind` (in `namespace` when namespaced). */
export function collectionPath(apiVersion: string, kind: string, namespace = ""): string {
  const info = INSTALL_KINDS[`${apiVersion}/${kind}`];
  if (!info) throw new Error(`${apiVersion} ${kind}: not a kind meshctl installs`);
  const root = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return info.namespaced && namespace !== ""
    ? `${root}/namespaces/${namespace}/${info.plural}`
    : `${root}/${info.plural}`;
}

/** The object's own path. */
export function objectPath(o: KubeObject): string {
  return `${collectionPath(o.apiVersion, o.kind, o.metadata.namespace ?? "")}/${o.metadata.name}`;
}

/** `Kind namespace/name` or `Kind name`, for messages. */
export function describe(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;
}

/**
 * Creates `o`, or merges it into the live object.
 *
 * @returns "created" or "updated"
 * @throws Error naming the object and the API's reason
 */
export async function applyObject(api: KubeApi, o: KubeObject): Promise<"created" | "updated"> {
  try {
    try {
      await api.json("GET", objectPath(o));
    } catch (e) {
      if (!(e instanceof ApiError) || e.statusCode !== 404) throw e;
      await api.json("POST", collectionPath(o.apiVersion, o.kind, o.metadata.namespace ?? ""), { body: o });
      return "created";
    }
    await api.json("PATCH", objectPath(o), { body: o, contentType: "application/merge-patch+json" });
    return "updated";
  } catch (e) {
    throw new Error(`${describe(o)}: ${(e as Error).message}`);
  }
}

/** Deletes `o`; an object already gone is no error. */
export async function deleteObject(api: KubeApi, o: KubeObject): Promise<boolean> {
  try {
    await api.json("DELETE", objectPath(o));
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.statusCode === 404) return false;
    throw new Error(`${describe(o)}: ${(e as Error).message}`);
  }
}

/**
 * Every live object of the install kinds carrying the ownership label and matching `selector` (a
 * label selector added to `operator.mesh.io/component`), across namespaces.
 */
export async function ownedObjects(api: KubeApi, selector: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  const labelSelector = [COMPONENT_LABEL, selector].filter((s) => s !== "").join(",");
  for (const key of Object.keys(INSTALL_KINDS)) {
    const slash = key.lastIndexOf("/");
    const apiVersion = key.slice(0, slash);
    const kind = key.slice(slash + 1);
    try {
      const list = await api.json<{ items?: KubeObject[] }>("GET", collectionPath(apiVersion, kind), {
        query: { labelSelector },
      });
      for (const item of list.items ?? []) out.push({ ...item, apiVersion, kind });
    } catch (e) {
      // A kind the cluster does not serve (the mesh's CRDs not installed) holds nothing of ours.
      if (e instanceof ApiError && e.statusCode === 404) continue;
      throw e;
    }
  }
  return out;
}

/** The live objects of revision `revision` (label value) that `keep` does not name. */
export async function staleObjects(
  api: KubeApi,
  revisionLabel: string,
  keep: KubeObject[],
): Promise<KubeObject[]> {
  const names = new Set(keep.map(describe));
  const live = await ownedObjects(api, `${REV_LABEL}=${revisionLabel}`);
  return live.filter((o) => !names.has(describe(o)));
}

/** A Deployment's readiness as the Deployment controller reports it. */
export function deploymentReady(o: Record<string, unknown>): { ready: boolean; detail: string } {
  const spec = (o.spec ?? {}) as Record<string, unknown>;
  const status = (o.status ?? {}) as Record<string, unknown>;
  const want = typeof spec.replicas === "number" ? spec.replicas : 1;
  const ready = typeof status.readyReplicas === "number" ? status.readyReplicas : 0;
  const updated = typeof status.updatedReplicas === "number" ? status.updatedReplicas : 0;
  return { ready: ready >= want && updated >= want, detail: `${ready}/${want} replicas ready` };
}
