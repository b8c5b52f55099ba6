/**
 * The proxy settings themselves: their type, defaults and check ({@link proxySettingsOf}). Apart from
 * ./mod.ts so that the proxy's data path can import them without the YAML parser that
 * ./proxy_config_annotation.ts needs (proxy/workers/README.md, module graph).
 *
 * @module
 */
import { type DenialExplanation, denialExplanationOf, NO_DENIAL_EXPLANATION } from "./denial_explanation.ts";
import { trustedHopsOf } from "./forwarded_for.ts";

/**
 * How a request path is normalized before authorization and routing (Istio's
 * `meshConfig.pathNormalization.normalization`, Envoy's HCM `normalize_path`, `merge_slashes` and
 * `path_with_escaped_slashes_action`).
 */
export type PathNormalization = "NONE" | "BASE" | "MERGE_SLASHES" | "DECODE_AND_MERGE_SLASHES";

/** The path normalization options, in Istio's order. */
export const PATH_NORMALIZATIONS: readonly PathNormalization[] = [
  "NONE",
  "BASE",
  "MERGE_SLASHES",
  "DECODE_AND_MERGE_SLASHES",
];

/** The settings a proxy applies to its data path. */
export interface ProxySettings {
  /** meshConfig.pathNormalization.normalization. */
  pathNormalization: PathNormalization;
  /**
   * Trusted proxies in front of a gateway (meshConfig.defaultConfig.gatewayTopology.numTrustedProxies):
   * how many X-Forwarded-For entries, counted from the right, were appended by hops the mesh trusts.
   */
  numTrustedProxies: number;
  /** Who may read a denial's explanation (`x-mesh-authz-reason`); nobody by default. */
  denialExplanation: DenialExplanation;
  /**
   * meshConfig.outboundTrafficPolicy.mode: what a sidecar does with a captured connection to a
   * destination outside the service registry: ALLOW_ANY (Istio's default) passes it through,
   * REGISTRY_ONLY closes it.
   */
  outboundTrafficPolicy: OutboundTrafficPolicy;
}

/** Istio's MeshConfig.OutboundTrafficPolicy.Mode. */
export type OutboundTrafficPolicy = "ALLOW_ANY" | "REGISTRY_ONLY";
const OUTBOUND_TRAFFIC_POLICIES: readonly OutboundTrafficPolicy[] = ["ALLOW_ANY", "REGISTRY_ONLY"];

/**
 * The settings of a mesh config that sets none. Path normalization is DECODE_AND_MERGE_SLASHES, not
 * Istio's BASE: BASE leaves `//p`, `/%2Fp` and `/\p` reaching `/p` past a DENY on `/p`, and Istio's
 * own best practices recommend DECODE_AND_MERGE_SLASHES (see docs/security.md).
 */
export const DEFAULT_PROXY_SETTINGS: Readonly<ProxySettings> = Object.freeze({
  pathNormalization: "DECODE_AND_MERGE_SLASHES",
  numTrustedProxies: 0,
  denialExplanation: NO_DENIAL_EXPLANATION,
  outboundTrafficPolicy: "ALLOW_ANY",
});

/**
 * Checks settings as they arrive (from YAML or decoded from a resource) and fills defaults.
 *
 * @param value the settings object; absent fields take DEFAULT_PROXY_SETTINGS
 * @param at the field path of `value` in error messages, e.g. `settings`; or, where the fields are
 *   written elsewhere (a mesh config), the path of each field
 * @throws Error `<at>.<field>: <value> is not ...` for a field of the wrong type or value
 */
export function proxySettingsOf(
  value: Record<string, unknown>,
  at: string | ((field: keyof ProxySettings) => string),
): ProxySettings {
  const fieldPath = typeof at === "string" ? (field: string) => `${at}.${field}` : at;
  const settings: ProxySettings = { ...DEFAULT_PROXY_SETTINGS };
  const path = value.pathNormalization;
  if (path !== undefined && path !== "") {
    if (!PATH_NORMALIZATIONS.includes(path as PathNormalization)) {
      throw new Error(
        `${fieldPath("pathNormalization")}: ${JSON.stringify(path)} is not one of ${
          PATH_NORMALIZATIONS.join(", ")
        }`,
      );
    }
    settings.pathNormalization = path as PathNormalization;
  }
  if (value.numTrustedProxies !== undefined) {
    settings.numTrustedProxies = trustedHopsOf(value.numTrustedProxies, fieldPath("numTrustedProxies"));
  }
  if (value.denialExplanation !== undefined) {
    settings.denialExplanation = denialExplanationOf(value.denialExplanation, fieldPath("denialExplanation"));
  }
  const policy = value.outboundTrafficPolicy;
  if (policy !== undefined && policy !== "") {
    if (!OUTBOUND_TRAFFIC_POLICIES.includes(policy as OutboundTrafficPolicy)) {
      throw new Error(
        `${fieldPath("outboundTrafficPolicy")}: ${JSON.stringify(policy)} is not one of ${
          OUTBOUND_TRAFFIC_POLICIES.join(", ")
        }`,
      );
    }
    settings.outboundTrafficPolicy = policy as OutboundTrafficPolicy;
  }
  return settings;
}
