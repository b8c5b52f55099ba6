/**
 * Discovery documents: `/version`, the legacy `/api`, `/api/v1`, `/apis`, `/apis/<group>` and
 * `/apis/<group>/<version>` (APIVersions, APIGroupList, APIGroup, APIResourceList), and aggregated
 * discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) that kubectl 1.32 asks for first on `/api`
 * and `/apis` with `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`.
 * Source: Kubernetes API concepts, "Discovery API" (v1.32).
 *
 * @module
 */
import type { Registry } from "./registry.ts";
import { apiVersionOf, type ResourceType, STORED_VERBS } from "./resource_types.ts";
import type { KubeObject } from "./types.ts";

/** The Content-Type of an aggregated discovery answer. */
export const AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** True when the Accept header asks for aggregated discovery v2. */
export function wantsAggregated(accept: string | null): boolean {
  return (accept ?? "").split(",").some((part) =>
    part.includes("g=apidiscovery.k8s.io") && part.includes("v=v2;") &&
    part.includes("as=APIGroupDiscoveryList")
  );
}

/** The `/version` document (a made-up build of the version kubectl 1.32 expects). */
export function versionInfo(): KubeObject {
  return {
    major: "1",
    minor: "32",
    gitVersion: "v1.32.0-mesh-kube-api",
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "none (Deno)",
    compiler: "deno",
    platform: `${Deno.build.os}/${Deno.build.arch}`,
  };
}

function verbsOf(t: ResourceType): string[] {
  return t.createOnly ? ["create"] : STORED_VERBS;
}

function subresourceVerbs(sub: string): string[] {
  return sub === "token" ? ["create"] : ["get", "patch", "update"];
}

/** The APIResourceList of one group/version (legacy discovery). */
export function resourceList(registry: Registry, group: string, version: string): KubeObject | undefined {
  const types = registry.ofVersion(group, version);
  if (types.length === 0) return undefined;
  const resources: KubeObject[] = [];
  for (const t of types) {
    resources.push({
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: verbsOf(t),
      ...(t.shortNames.length ? { shortNames: t.shortNames } : {}),
      ...(t.categories?.length ? { categories: t.categories } : {}),
    });
    for (const sub of t.subresources) {
      resources.push({
        name: `${t.resource}/${sub}`,
        singularName: "",
        namespaced: t.namespaced,
        kind: sub === "token" ? "TokenRequest" : t.kind,
        ...(sub === "token" ? { group: "authentication.k8s.io", version: "v1" } : {}),
        verbs: subresourceVerbs(sub),
      });
    }
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf({ group, version }),
    resources,
  };
}

/** The `/api` APIVersions document. */
export function coreVersions(): KubeObject {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] };
}

function groupDoc(name: string, versions: string[]): KubeObject {
  const gv = (v: string): KubeObject => ({ groupVersion: `${name}/${v}`, version: v });
  return { name, versions: versions.map(gv), preferredVersion: gv(versions[0]) };
}

/** The `/apis` APIGroupList document. */
export function groupList(registry: Registry): KubeObject {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: registry.groups().map((g) => groupDoc(g.name, g.versions)),
  };
}

/** The `/apis/<group>` APIGroup document, or undefined when the group is not served. */
export function group(registry: Registry, name: string): KubeObject | undefined {
  const g = registry.groups().find((x) => x.name === name);
  return g && { kind: "APIGroup", apiVersion: "v1", ...groupDoc(g.name, g.versions) };
}

function aggregatedResource(t: ResourceType): KubeObject {
  return {
    resource: t.resource,
    responseKind: { group: t.group, version: t.version, kind: t.kind },
    scope: t.namespaced ? "Namespaced" : "Cluster",
    singularResource: t.singular,
    verbs: verbsOf(t),
    ...(t.shortNames.length ? { shortNames: t.shortNames } : {}),
    ...(t.categories?.length ? { categories: t.categories } : {}),
    subresources: t.subresources.map((sub) => ({
      subresource: sub,
      responseKind: sub === "token"
        ? { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest" }
        : { group: t.group, version: t.version, kind: t.kind },
      verbs: subresourceVerbs(sub),
    })),
  };
}

function aggregatedGroup(registry: Registry, name: string, versions: string[]): KubeObject {
  return {
    metadata: { name },
    versions: versions.map((version) => ({
      version,
      resources: registry.ofVersion(name, version).map(aggregatedResource),
      freshness: "Current",
    })),
  };
}

/** The aggregated discovery document of `/api` (core group only) or `/apis` (every named group). */
export function aggregated(registry: Registry, core: boolean): KubeObject {
  const items = core
    ? [aggregatedGroup(registry, "", ["v1"])]
    : registry.groups().map((g) => aggregatedGroup(registry, g.name, g.versions));
  return { kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2", metadata: {}, items };
}
