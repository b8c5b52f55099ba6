/**
 * Istio's per-workload ProxyConfig override: the `proxy.istio.io/config` annotation (YAML or JSON of
 * a ProxyConfig) on a workload, here a WorkloadEntry or a WorkloadGroup's `spec.metadata` (copied to
 * the entries that register into it). Only `gatewayTopology.numTrustedProxies` is read; it replaces
 * the mesh-wide `defaultConfig.gatewayTopology.numTrustedProxies` for that workload, as Istio's
 * "Configuring Gateway Network Topology" describes for an ingress gateway.
 *
 * @module
 */
import { parse } from "yaml";
import { trustedHopsOf } from "./forwarded_for.ts";

/** The annotation's name. */
export const PROXY_CONFIG_ANNOTATION = "proxy.istio.io/config";

/** What a workload's annotation overrides. */
export interface ProxyConfigOverrides {
  /** gatewayTopology.numTrustedProxies: replaces the mesh-wide value for this workload. */
  numTrustedProxies?: number;
}

/**
 * Reads the annotation of one workload.
 *
 * @param annotations the workload's `metadata.annotations` (absent: no override)
 * @param at the workload in messages, e.g. `WorkloadEntry istio-system/ingressgateway-1`
 * @returns the overrides, and one warning per field that has no effect
 * @throws Error `<at> annotation proxy.istio.io/config: <field>: <reason>` for invalid YAML or a bad value
 */
export function proxyConfigOverrides(
  annotations: Readonly<Record<string, unknown>> | undefined,
  at: string,
): { overrides: ProxyConfigOverrides; warnings: string[] } {
  const text = annotations?.[PROXY_CONFIG_ANNOTATION];
  if (text === undefined) return { overrides: {}, warnings: [] };
  const where = `${at} annotation ${PROXY_CONFIG_ANNOTATION}`;
  if (typeof text !== "string") throw new Error(`${where}: expected a string`);
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new Error(`${where}: invalid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (doc === null || doc === undefined) return { overrides: {}, warnings: [] };
  const warnings: string[] = [];
  const config = mapAt(doc, "", where);
  for (const k of Object.keys(config)) {
    if (k !== "gatewayTopology") warnings.push(`${where}: field ${k} has no effect`);
  }
  if (config.gatewayTopology === undefined || config.gatewayTopology === null) {
    return { overrides: {}, warnings };
  }
  const topology = mapAt(config.gatewayTopology, "gatewayTopology", where);
  for (const k of Object.keys(topology)) {
    if (k !== "numTrustedProxies") warnings.push(`${where}: field gatewayTopology.${k} has no effect`);
  }
  if (topology.numTrustedProxies === undefined) return { overrides: {}, warnings };
  const hops = trustedHopsOf(topology.numTrustedProxies, `${where}: gatewayTopology.numTrustedProxies`);
  return { overrides: { numTrustedProxies: hops }, warnings };
}

function mapAt(value: unknown, field: string, where: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${where}: ${field === "" ? "" : `${field}: `}expected a map`);
  }
  return value as Record<string, unknown>;
}
