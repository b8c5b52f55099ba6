/**
 * The components' titles in meshctl's output, as istioctl names its components ("Istio core",
 * "Istiod", "Ingress gateways").
 *
 * @module
 */

/** Title by component name (profile.ts COMPONENTS). */
export const COMPONENT_TITLES: Record<string, string> = {
  base: "Mesh core",
  meshd: "Meshd",
  ingressGateway: "Ingress gateways",
};
