/**
 * The mesh configuration file (--meshConfig; Istio's MeshConfig): the fields meshd uses today,
 * `rootNamespace` and `trustDomain`. A missing file means the default mesh, as the seed says; a file
 * that exists but is invalid is an error naming the file and field, never silently the default.
 *
 * @module
 */
import { parse } from "yaml";

/** The mesh config fields meshd reads. */
export interface MeshConfig {
  /** The root namespace of mesh-wide policies; default mesh-system. */
  rootNamespace: string;
  /** The trust domain of workload identities; default cluster.local. */
  trustDomain: string;
}

/** The default mesh. */
export const DEFAULT_MESH_CONFIG: MeshConfig = { rootNamespace: "mesh-system", trustDomain: "cluster.local" };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const TRUST_DOMAIN = /^[a-z0-9._-]{1,255}$/;

/**
 * Reads the mesh config file.
 *
 * @returns the config, and warnings for fields meshd does not use yet
 * @throws Error naming the file, field and reason for unreadable or invalid content
 */
export async function loadMeshConfig(path: string): Promise<{ config: MeshConfig; warnings: string[] }> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { config: { ...DEFAULT_MESH_CONFIG }, warnings: [] };
    throw new Error(`--meshConfig ${path}: cannot read: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(text) ?? {};
  } catch (e) {
    throw new Error(`--meshConfig ${path}: invalid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new Error(`--meshConfig ${path}: expected a map of mesh config fields`);
  }
  const fields = doc as Record<string, unknown>;
  const config = { ...DEFAULT_MESH_CONFIG };
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (key === "rootNamespace" || key === "trustDomain") {
      const ok = typeof value === "string" &&
        (key === "rootNamespace" ? DNS_LABEL : TRUST_DOMAIN).test(value);
      if (!ok) {
        throw new Error(`--meshConfig ${path}: ${key}: ${JSON.stringify(value)} is not a valid ${key}`);
      }
      config[key] = value as string;
    } else {
      warnings.push(`--meshConfig ${path}: field ${key} has no effect yet`);
    }
  }
  return { config, warnings };
}
