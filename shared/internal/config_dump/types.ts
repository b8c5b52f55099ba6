/**
 * The `@type` URLs of the sections in the proxy's `/config_dump` (Envoy's admin ConfigDump shape,
 * `{"configs": [{"@type": ..., ...}]}`): the proxy writes them (proxy/admin/config_dump.ts) and
 * meshctl finds its sections by them (meshctl/proxy_config/sections.ts, meshctl/authz/config_dump.ts).
 * Source: Envoy's admin API, envoy.admin.v3 (BootstrapConfigDump, ListenersConfigDump, ...); the
 * `mesh.admin.v1.MeshConfigDump` section is the mesh's own (policies, routes, settings in force).
 *
 * @module
 */

/** Envoy's admin type URLs, by section. */
export const DUMP_TYPES = {
  bootstrap: "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
  listeners: "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
  clusters: "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
  endpoints: "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump",
  routes: "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
  secrets: "type.googleapis.com/envoy.admin.v3.SecretsConfigDump",
  mesh: "type.googleapis.com/mesh.admin.v1.MeshConfigDump",
} as const;
