/**
 * The mesh configuration file (--meshConfig; Istio's MeshConfig): the fields meshd uses today,
 * `rootNamespace`, `trustDomain`, and the data-path settings pushed to proxies
 * (`pathNormalization.normalization`, `defaultConfig.gatewayTopology.numTrustedProxies`,
 * `outboundTrafficPolicy.mode`, and this
 * mesh's own `denialExplanation: {principals, ipBlocks}`: shared's ProxySettings). A missing file means the default mesh, as the seed says; a file
 * that exists but is invalid is an error naming the file and field, never silently the default.
 *
 * @module
 */
import { parse } from "yaml";
import {
  DEFAULT_PROXY_SETTINGS,
  type ProxySettings,
  proxySettingsOf,
} from "../../shared/proxy_settings/mod.ts";

/** The mesh config fields meshd reads. */
export interface MeshConfig {
  /** The root namespace of mesh-wide policies; default mesh-system. */
  rootNamespace: string;
  /** The trust domain of workload identities; default cluster.local. */
  trustDomain: string;
  /** What every proxy applies to its data path. */
  proxySettings: ProxySettings;
}

/** The default mesh. */
export const DEFAULT_MESH_CONFIG: MeshConfig = {
  rootNamespace: "mesh-system",
  trustDomain: "cluster.local",
  proxySettings: DEFAULT_PROXY_SETTINGS,
};

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
  const config = { ...DEFAULT_MESH_CONFIG };
  const warnings: string[] = [];
  const settings: Record<string, unknown> = {};
  for (const [key, value] of new Map<string, unknown>(Object.entries(doc))) {
    if (key === "rootNamespace" || key === "trustDomain") {
      if (typeof value !== "string" || !(key === "rootNamespace" ? DNS_LABEL : TRUST_DOMAIN).test(value)) {
        throw new Error(`--meshConfig ${path}: ${key}: ${JSON.stringify(value)} is not a valid ${key}`);
      }
      config[key] = value;
    } else if (key === "pathNormalization") {
      settings.pathNormalization = mapField(value, key, path, warnings).normalization;
    } else if (key === "defaultConfig") {
      const topology = mapField(
        mapField(value, key, path, warnings).gatewayTopology,
        `${key}.gatewayTopology`,
        path,
        warnings,
      );
      settings.numTrustedProxies = topology.numTrustedProxies;
    } else if (key === "denialExplanation") {
      settings.denialExplanation = mapField(value, key, path, warnings);
    } else if (key === "outboundTrafficPolicy") {
      settings.outboundTrafficPolicy = mapField(value, key, path, warnings).mode;
    } else {
      warnings.push(`--meshConfig ${path}: field ${key} has no effect yet`);
    }
  }
  try {
    config.proxySettings = proxySettingsOf(settings, (field) => SETTINGS_FIELDS[field] ?? field);
  } catch (e) {
    throw new Error(`--meshConfig ${path}: ${(e as Error).message}`);
  }
  return { config, warnings };
}

/** Where each ProxySettings field is written in a mesh config, where not at its own name. */
const SETTINGS_FIELDS: Partial<Record<keyof ProxySettings, string>> = {
  pathNormalization: "pathNormalization.normalization",
  numTrustedProxies: "defaultConfig.gatewayTopology.numTrustedProxies",
  outboundTrafficPolicy: "outboundTrafficPolicy.mode",
};

/**
 * A nested map of the mesh config; absent is empty. Fields of it that meshd does not read warn.
 *
 * @throws Error naming the file and field when the value is not a map
 */
function mapField(value: unknown, at: string, path: string, warnings: string[]): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`--meshConfig ${path}: ${at}: expected a map`);
  }
  const known = MAP_FIELDS[at] ?? [];
  for (const k of Object.keys(value)) {
    if (!known.includes(k)) warnings.push(`--meshConfig ${path}: field ${at}.${k} has no effect yet`);
  }
  return Object.fromEntries(Object.entries(value));
}

/** The fields meshd reads inside each nested map. */
const MAP_FIELDS: Record<string, string[]> = {
  pathNormalization: ["normalization"],
  defaultConfig: ["gatewayTopology"],
  "defaultConfig.gatewayTopology": ["numTrustedProxies"],
  denialExplanation: ["principals", "ipBlocks"],
  outboundTrafficPolicy: ["mode"],
};
