/**
 * Ingress gateway routing: Gateways and VirtualServices to route configurations (HTTP, HTTPS, and
 * TLS passthrough by SNI), and route selection.
 *
 * @module
 */
export type {
  CredentialContents,
  GatewayRoute,
  GatewayRouteDestination,
  GatewayRouteOptions,
  GatewayWorkload,
  NamedSpec,
  RouteConfiguration,
  RouteSelection,
  ServerTls,
  SkippedRoute,
  SkippedServer,
  TlsRoute,
  UriMatch,
  VirtualHost,
} from "./route_configuration.ts";
export { gatewayRouteConfigurations, gatewaysSelecting } from "./gateway_routes.ts";
export { credentialNamesOf, credentialResourceName } from "./server_tls.ts";
export { passthroughTls } from "./tls_routes.ts";
export {
  meshTlsRouteConfigurations,
  meshTlsRouteName,
  type MeshTlsRouteOptions,
  type MeshTlsService,
} from "./mesh_tls_routes.ts";
export {
  meshL4RouteScope,
  meshL4RuleWarnings,
  meshTcpRouteConfigurations,
  meshTcpRouteName,
} from "./mesh_tcp_routes.ts";
export { domainMatches, selectBySni, selectRoute, selectTlsRoute } from "./route_selection.ts";
