/**
 * The `proxy.istio.io/config` annotation of a WorkloadEntry (`metadata.annotations`) or of a
 * WorkloadGroup's entries (`spec.metadata.annotations`): an error for invalid YAML or a bad
 * `gatewayTopology.numTrustedProxies`, a warning for a ProxyConfig field the mesh does not read
 * (shared/proxy_settings/proxy_config_annotation.ts).
 *
 * @module
 */
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import {
  PROXY_CONFIG_ANNOTATION,
  proxyConfigOverrides,
} from "../../proxy_settings/proxy_config_annotation.ts";

/**
 * Checks the annotation in an `annotations` map.
 *
 * @param annotations the map as written (anything; the schema checks its shape)
 * @param at the map's field path
 */
export function checkProxyConfigAnnotation(annotations: unknown, at: FieldPath): Finding[] {
  if (typeof annotations !== "object" || annotations === null) return [];
  const path = [...at, PROXY_CONFIG_ANNOTATION];
  const prefix = `annotation ${PROXY_CONFIG_ANNOTATION}: `;
  const strip = (m: string) => m.slice(m.indexOf(prefix) + prefix.length);
  try {
    const r = proxyConfigOverrides(annotations as Record<string, unknown>, "");
    return r.warnings.map((w) => warning(path, strip(w)));
  } catch (e) {
    return [error(path, strip((e as Error).message))];
  }
}
