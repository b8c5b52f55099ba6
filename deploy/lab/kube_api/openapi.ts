/**
 * The part of OpenAPI v3 that kubectl 1.32 needs: `/openapi/v3` (the root listing one document per
 * group/version) and `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>` with, per resource,
 * POST and PATCH operations that declare the `fieldValidation` query parameter and
 * `x-kubernetes-group-version-kind`. From these kubectl concludes that the server validates fields
 * (k8s.io/cli-runtime resource/query_param_verifier_v3.go) and runs `kubectl apply` without
 * downloading schemas; without them it fails with "failed to download openapi". No component schemas
 * are served: kubectl then builds strategic merge patches from its compiled-in types, and patches of
 * custom resources as JSON merge patches, as it does for any CRD without a schema. `/openapi/v2` is not
 * served (kubectl tolerates its 404 after v3 answered).
 *
 * @module
 */
import type { Registry } from "./registry.ts";
import { apiVersionOf, type ResourceType } from "./resource_types.ts";
import type { KubeObject } from "./types.ts";

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

async function hashOf(doc: unknown): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(doc)));
  return [...new Uint8Array(digest).slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("")
    .toUpperCase();
}

function groupVersions(registry: Registry): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const t of registry.all()) seen.set(`${t.group}/${t.version}`, { group: t.group, version: t.version });
  return [...seen.values()];
}

const PARAMS = ["dryRun", "fieldManager", "fieldValidation"].map((name) => ({
  name,
  in: "query",
  schema: { type: "string", uniqueItems: true },
}));

function operation(t: ResourceType, action: string): KubeObject {
  return {
    operationId: `${action}${t.kind}`,
    parameters: action === "patch"
      ? [...PARAMS, { name: "force", in: "query", schema: { type: "boolean" } }]
      : PARAMS,
    responses: { "200": { description: "OK" } },
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": { group: t.group, version: t.version, kind: t.kind },
  };
}

/** The document of one group/version, or undefined when it is not served. */
export function groupVersionDoc(registry: Registry, group: string, version: string): KubeObject | undefined {
  const types = registry.ofVersion(group, version);
  if (types.length === 0) return undefined;
  const paths: Record<string, KubeObject> = {};
  for (const t of types) {
    const base = `/${gvPath(group, version)}${t.namespaced ? "/namespaces/{namespace}" : ""}/${t.resource}`;
    paths[base] = { post: operation(t, "post") };
    if (!t.createOnly) paths[`${base}/{name}`] = { patch: operation(t, "patch") };
  }
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes (mesh test API server)", version: apiVersionOf({ group, version }) },
    paths,
    components: { schemas: {} },
  };
}

/** The `/openapi/v3` root: one entry per served group/version with its serverRelativeURL. */
export async function rootDoc(registry: Registry): Promise<KubeObject> {
  const paths: Record<string, KubeObject> = {};
  for (const { group, version } of groupVersions(registry)) {
    const hash = await hashOf(groupVersionDoc(registry, group, version));
    paths[gvPath(group, version)] = {
      serverRelativeURL: `/openapi/v3/${gvPath(group, version)}?hash=${hash}`,
    };
  }
  return { paths };
}
