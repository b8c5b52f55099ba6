/**
 * The mesh's xDS resource messages (shared/proto/mesh/v1/*.proto) as shared's decodeResource gives
 * them: camelCase fields, enums as their names, 64-bit integers as numbers, and every field present
 * (repeated as [], maps as {}, scalars as their zero value, an unset message as null). This is the
 * decode boundary of the agent: {@link decodeMessage} is the one place that types the bytes, and
 * messages_test.ts fails when these types and the descriptors part.
 *
 * Only the shapes are promised here; what the values must be (ports in range, modes known, PEM...)
 * is checked by resources.ts.
 *
 * @module
 */
import { decodeResource, RESOURCE_TYPES } from "../../shared/proto/resources.ts";

/** mesh.v1.PortMtls; `mode` is an MtlsMode name (MTLS_MODE_UNSPECIFIED when unset). */
export type PortMtlsMessage = { port: number; mode: string; policy: string; scope: string };

/** mesh.v1.Workload. `settings` (mesh.v1.ProxySettings) is checked by shared's proxySettingsOf. */
export type WorkloadMessage = {
  name: string;
  namespace: string;
  serviceAccount: string;
  trustDomain: string;
  addresses: string[];
  labels: Record<string, string>;
  proxied: boolean;
  ports: Record<string, number>;
  inboundMtls: PortMtlsMessage[];
  defaultMtls: PortMtlsMessage | null;
  network: string;
  locality: string;
  weight: number;
  settings: Record<string, unknown> | null;
};

/** mesh.v1.ServicePort. */
export type ServicePortMessage = { name: string; number: number; targetPort: number; protocol: string };

/** mesh.v1.Endpoint; `ports` maps service port to endpoint port, keys as decimal strings. */
export type EndpointMessage = {
  workload: string;
  address: string;
  ports: Record<string, number>;
  proxied: boolean;
  identity: string;
  labels: Record<string, string>;
  mtlsDisabledPorts: number[];
};

/** mesh.v1.Service. */
export type ServiceMessage = {
  name: string;
  namespace: string;
  hosts: string[];
  addresses: string[];
  ports: ServicePortMessage[];
  endpoints: EndpointMessage[];
  location: string;
  resolution: string;
};

/** mesh.v1.Authorization; its rules go to the runtime as they are (shared's authorization evaluation). */
export type AuthorizationMessage = {
  name: string;
  namespace: string;
  action: string;
  scope: string;
  rules: Record<string, unknown>[];
  rulesAbsent: boolean;
};

/** mesh.v1.JwtProvider; the fields beyond `issuer` go to the runtime as they are. */
export type JwtProviderMessage = { issuer: string } & Record<string, unknown>;

/** mesh.v1.JwtPolicy. */
export type JwtPolicyMessage = { name: string; namespace: string; providers: JwtProviderMessage[] };

/** mesh.v1.ServerTls. */
export type ServerTlsMessage = {
  mode: string;
  sniHosts: string[];
  credentialName: string;
  caCredentialName: string;
  minProtocolVersion: string;
  maxProtocolVersion: string;
  subjectAltNames: string[];
};

/** mesh.v1.UriMatch. */
export type UriMatchMessage = { exact: string; prefix: string; regex: string; ignoreCase: boolean };

/** mesh.v1.RouteDestination. */
export type RouteDestinationMessage = { host: string; port: number; weight: number };

/** mesh.v1.Route. */
export type RouteMessage = {
  name: string;
  matches: UriMatchMessage[];
  destinations: RouteDestinationMessage[];
  /** 0: no route timeout. */
  timeoutMs: number;
};

/** mesh.v1.VirtualHost. */
export type VirtualHostMessage = {
  name: string;
  domains: string[];
  routes: RouteMessage[];
  httpsRedirect: boolean;
};

/** mesh.v1.TlsRoute. */
export type TlsRouteMessage = { name: string; sniHosts: string[]; destinations: RouteDestinationMessage[] };

/** mesh.v1.RouteConfiguration; `tls` is null for a plain-text server. */
export type RouteConfigurationMessage = {
  name: string;
  port: number;
  bindPort: number;
  gateways: string[];
  virtualHosts: VirtualHostMessage[];
  tls: ServerTlsMessage | null;
  tlsRoutes: TlsRouteMessage[];
};

/** mesh.v1.TlsCredential. */
export type TlsCredentialMessage = {
  name: string;
  certificateChain: string;
  privateKey: string;
  caCertificates: string;
  source: string;
};

/** The message of each resource kind, by its RESOURCE_TYPES key. */
export type MessageOf = {
  workload: WorkloadMessage;
  service: ServiceMessage;
  authorization: AuthorizationMessage;
  jwtPolicy: JwtPolicyMessage;
  routeConfiguration: RouteConfigurationMessage;
  tlsCredential: TlsCredentialMessage;
};

/**
 * Decodes the bytes of a resource of `kind`.
 *
 * @throws Error when the bytes are not a valid message of that type
 */
export function decodeMessage<K extends keyof MessageOf>(kind: K, bytes: Uint8Array): MessageOf[K] {
  // The one narrowing of the agent's decode boundary: protobufjs builds the object from the
  // descriptor of RESOURCE_TYPES[kind], with every field present (messages_test.ts checks the match).
  return decodeResource(RESOURCE_TYPES[kind], bytes) as MessageOf[K];
}
