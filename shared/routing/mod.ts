/**
 * Ingress gateway routing: Gateways and VirtualServices to route configurations, and route selection.
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
  SkippedServer,
  UriMatch,
  VirtualHost,
} from "./route_configuration.ts";
export { gatewayRouteConfigurations, gatewaysSelecting } from "./gateway_routes.ts";
export { credentialNamesOf, credentialResourceName } from "./server_tls.ts";
export { selectBySni, selectRoute } from "./route_selection.ts";
