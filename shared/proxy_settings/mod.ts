/**
 * Proxy settings: the mesh-wide data-path choices that meshd reads from the mesh config
 * (`--meshConfig`, Istio's MeshConfig) and pushes to every proxy inside its `mesh.v1.Workload`
 * (`settings`), so that sidecars and gateways apply one choice. Parsed and checked here, once, for
 * meshd's mesh config reader and the proxy's resource decoder alike.
 *
 * Source: Istio's MeshConfig (`pathNormalization`, `defaultConfig.gatewayTopology`); `denialExplanation`
 * is this mesh's own (see ./denial_explanation.ts).
 *
 * @module
 */

export * from "./denial_explanation.ts";
export * from "./forwarded_for.ts";
export * from "./proxy_config_annotation.ts";
export * from "./settings.ts";
