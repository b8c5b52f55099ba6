/**
 * `meshctl analyze` on a live cluster (meshctl seed "analyze", `--use-orch`; istioctl reads the
 * cluster the same way): the mesh's kinds under the mesh's and Istio's API groups (schema-checked as
 * `meshctl validate` does: the API server does not check CRD schemas), and Namespaces, Pods and
 * Services, which become workloads with the service ports that target them.
 *
 * @module
 */
import { ACCEPTED_API_VERSIONS, KINDS, validateText, type ValidationIssue } from "../../../shared/mod.ts";
import { type ApiClient, ApiError } from "../../../shared/internal/kube/api_client.ts";
import { type AnalysisInput, type AnalyzedResource, finishInput } from "../input.ts";
import { type ClusterObjects, podBoundPorts, toNamespace, toPod, toService } from "./kube_objects.ts";

/** The URL plural of a kind, as deploy/crds/ names them (`AuthorizationPolicy` → `authorizationpolicies`). */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  return /[^aeiou]y$/.test(lower) ? lower.slice(0, -1) + "ies" : lower + "s";
}

async function items(api: ApiClient, path: string): Promise<unknown[] | undefined> {
  try {
    const list = await api.json<{ items?: unknown[] }>("GET", path);
    return list.items ?? [];
  } catch (e) {
    // A group whose CRDs are not installed: nothing of that kind exists.
    if (e instanceof ApiError && e.statusCode === 404) return undefined;
    throw e;
  }
}

/** Only what validation and the analyzers read: not managedFields, status or the last-applied copy. */
function trimmed(o: Record<string, unknown>): Record<string, unknown> {
  const m = (o.metadata ?? {}) as Record<string, unknown>;
  const annotations = { ...(m.annotations as Record<string, string> | undefined) };
  delete annotations["kubectl.kubernetes.io/last-applied-configuration"];
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      ...(m.labels ? { labels: m.labels } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(m.creationTimestamp ? { creationTimestamp: m.creationTimestamp } : {}),
    },
    spec: o.spec,
  };
}

async function meshResources(
  api: ApiClient,
  rootNamespace: string,
): Promise<{ resources: AnalyzedResource[]; issues: ValidationIssue[] }> {
  const resources: AnalyzedResource[] = [];
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const def of KINDS) {
    // Each group's /v1 versions: the mesh's own first, then Istio's (one storage serves every version).
    for (const apiVersion of ACCEPTED_API_VERSIONS[def.group].filter((v) => v.endsWith("/v1"))) {
      const plural = pluralOf(def.kind);
      const found = await items(api, `/apis/${apiVersion}/${plural}`);
      for (const o of found ?? []) {
        const object = trimmed(o as Record<string, unknown>);
        const m = object.metadata as { name: string; namespace: string };
        const key = `${def.kind}/${m.namespace}/${m.name}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const file = `${plural}.${apiVersion.split("/")[0]}/${m.namespace}/${m.name}`;
        const result = validateText(JSON.stringify(object), file, { rootNamespace });
        // The origin (kind namespace/name) names the object; a cluster object has no file or line.
        issues.push(
          ...result.issues.map((i) => ({ ...i, file: "", line: undefined, documentIndex: undefined })),
        );
        for (const v of result.resources) {
          resources.push({ kind: def.kind, namespace: m.namespace, name: m.name, resource: v.resource });
        }
      }
    }
  }
  return { resources, issues };
}

/**
 * Reads a cluster for analysis.
 *
 * @param target what the summary line names, e.g. `cluster (context kind-lab)`
 * @throws ApiError when the API server refuses a list other than a missing CRD's
 */
export async function inputFromCluster(
  api: ApiClient,
  rootNamespace: string,
  target: string,
): Promise<AnalysisInput> {
  const [namespaces, pods, services, mesh] = await Promise.all([
    items(api, "/api/v1/namespaces"),
    items(api, "/api/v1/pods"),
    items(api, "/api/v1/services"),
    meshResources(api, rootNamespace),
  ]);
  const cluster: ClusterObjects = {
    namespaces: (namespaces ?? []).map(toNamespace),
    pods: (pods ?? []).map(toPod),
    services: (services ?? []).map(toService),
  };
  return inputFromObjects(cluster, mesh.resources, { rootNamespace, issues: mesh.issues, target });
}

/** An analysis input from cluster objects and mesh resources: pods become workloads with their bound ports. */
export function inputFromObjects(
  cluster: ClusterObjects,
  resources: AnalyzedResource[],
  o: { rootNamespace: string; issues: ValidationIssue[]; target: string },
): AnalysisInput {
  return finishInput(resources, {
    namespaces: cluster.namespaces.map((n) => n.name),
    workloads: cluster.pods.map((p) => ({
      namespace: p.namespace,
      name: p.name,
      labels: p.labels,
      kind: "Pod",
      bound: podBoundPorts(p, cluster.services),
    })),
    ...o,
    files: [],
    cluster,
  });
}
