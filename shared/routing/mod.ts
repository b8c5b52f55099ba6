/**
 * Ingress gateway routing: Gateways and VirtualServices to route configurations, and route selection.
 *
 * @module
 */
export {
  type CredentialContents,
  credentialNamesOf,
  credentialResourceName,
  type GatewayRoute,
  gatewayRouteConfigurations,
  type GatewayRouteDestination,
  type GatewayRouteOptions,
  gatewaysSelecting,
  type GatewayWorkload,
  type NamedSpec,
  type RouteConfiguration,
  type RouteSelection,
  selectBySni,
  selectRoute,
  type ServerTls,
  type SkippedServer,
  type UriMatch,
  type VirtualHost,
} from "./gateway_routes.ts";
