/**
 * Which group/version/resources are served right now: the built-in types plus those of every stored
 * CustomResourceDefinition. Versions within a group are ordered as Kubernetes does (GA before beta
 * before alpha, higher numbers first), the first one being the group's preferred version.
 *
 * @module
 */
import { BUILTIN_TYPES, type ResourceType, typesOfCrd } from "./resource_types.ts";
import type { KubeObject } from "./types.ts";

/** A served API group with its versions, preferred first. */
export interface ServedGroup {
  name: string;
  versions: string[];
}

const VERSION_RE = /^v(\d+)(?:(alpha|beta)(\d+))?$/;

/** Kubernetes' version priority: negative when `a` comes first (k8s.io/apimachinery CompareKubeAwareVersionStrings). */
export function compareVersions(a: string, b: string): number {
  const ma = VERSION_RE.exec(a);
  const mb = VERSION_RE.exec(b);
  if (!ma || !mb) return ma ? -1 : mb ? 1 : a.localeCompare(b);
  const rank = (m: RegExpExecArray): number => m[2] === undefined ? 2 : m[2] === "beta" ? 1 : 0;
  if (rank(ma) !== rank(mb)) return rank(mb) - rank(ma);
  if (ma[1] !== mb[1]) return Number(mb[1]) - Number(ma[1]);
  return Number(mb[3] ?? 0) - Number(ma[3] ?? 0);
}

/** The served types: built-ins and the CRDs' types, looked up by group, version and plural resource. */
export class Registry {
  #crdTypes = new Map<string, ResourceType[]>();

  /** Registers (or replaces) the types of the CRD named `crdName`; throws on an invalid CRD. */
  setCrd(crdName: string, crd: KubeObject): void {
    this.#crdTypes.set(crdName, typesOfCrd(crd));
  }

  /** Removes the types of the CRD named `crdName`. */
  deleteCrd(crdName: string): void {
    this.#crdTypes.delete(crdName);
  }

  /** Every served type. */
  all(): ResourceType[] {
    return [...BUILTIN_TYPES, ...[...this.#crdTypes.values()].flat()];
  }

  /** The type at group/version/resource, or undefined. */
  find(group: string, version: string, resource: string): ResourceType | undefined {
    return this.all().find((t) => t.group === group && t.version === version && t.resource === resource);
  }

  /** The served types of one group/version. */
  ofVersion(group: string, version: string): ResourceType[] {
    return this.all().filter((t) => t.group === group && t.version === version);
  }

  /** The named groups (not the core group), each with its versions, preferred first. */
  groups(): ServedGroup[] {
    const byGroup = new Map<string, Set<string>>();
    for (const t of this.all()) {
      if (!t.group) continue;
      const set = byGroup.get(t.group) ?? new Set<string>();
      set.add(t.version);
      byGroup.set(t.group, set);
    }
    return [...byGroup].map(([name, versions]) => ({ name, versions: [...versions].sort(compareVersions) }));
  }
}
