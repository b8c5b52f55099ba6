/**
 * `/config_dump`: the proxy's configuration as JSON in the shape of Envoy's admin ConfigDump
 * (`{"configs": [...]}`, one entry per `@type`), built from the agent's {@link RuntimeSnapshot} and the
 * command line. Private keys never appear: the workload certificate's key is shown as `[redacted]`,
 * as Envoy does. See proxy/docs/admin.md for the format.
 *
 * @module
 */
import { RESOURCE_TYPES, typeUrlOf } from "../../shared/proto/resources.ts";
import { DUMP_TYPES } from "../../shared/internal/config_dump/types.ts";
import { dialsMtls } from "../../shared/policy/auto_mtls.ts";
import type { RouteConfiguration, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { inboundModeOf, settingsInForce } from "../runtime/snapshot.ts";
import {
  gatewayListenerProtocol,
  inboundListenerProtocol,
  outboundListenerProtocol,
} from "./listener_protocol.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";
import { DEFAULT_HEAD_LIMITS } from "../http/head.ts";

/** The xDS type URLs the agent subscribes to. */
export const XDS_TYPES = {
  workload: typeUrlOf(RESOURCE_TYPES.workload),
  service: typeUrlOf(RESOURCE_TYPES.service),
  authorization: typeUrlOf(RESOURCE_TYPES.authorization),
  jwtPolicy: typeUrlOf(RESOURCE_TYPES.jwtPolicy),
  routeConfiguration: typeUrlOf(RESOURCE_TYPES.routeConfiguration),
  tlsCredential: typeUrlOf(RESOURCE_TYPES.tlsCredential),
} as const;

/** What the command line and start-up fixed. */
export interface BootstrapInfo {
  node: { id: string; cluster: string; metadata: Record<string, unknown> };
  discoveryAddress: string;
  plaintext: boolean;
  caAddress: string;
  adminPort: number;
  concurrency: number;
  inbound: { address: string; port: number; appAddress: string; appPort: number }[];
  outbound?: { host: string; port: number };
  /** Gateway mode (`--type router`): the address gateway listeners bind, one per route configuration. */
  gatewayAddress?: string;
  /** Timeouts and connection limit of every listener (--requestHeadersTimeout and the like). */
  connectionLimits: ListenerLimits;
  /** ms since the epoch. */
  startedAt: number;
}

/** A protobuf JSON Duration (`10s`, `0.5s`). */
function duration(ms: number): string {
  return `${ms / 1000}s`;
}

/**
 * The connection limit and HTTP settings of a listener: the listener connection limit (Envoy sets it by
 * runtime key; shown here on the listener), and the HTTP connection manager's settings
 * ({@link httpConnectionManager}) with its timeouts and head limits (0s: disabled; max_connections 0:
 * no limit), set by `--requestHeadersTimeout`, `--requestTimeout`, `--idleTimeout` and `--maxConnections`.
 */
function listenerSettings(snapshot: RuntimeSnapshot, gateway: boolean, l: ListenerLimits) {
  return {
    connection_limit: { max_connections: l.maxConnections },
    http_connection_manager: {
      ...httpConnectionManager(snapshot, gateway),
      request_headers_timeout: duration(l.requestHeadersTimeoutMs),
      request_timeout: duration(l.requestTimeoutMs),
      stream_idle_timeout: duration(l.idleTimeoutMs),
      common_http_protocol_options: {
        idle_timeout: duration(l.idleTimeoutMs),
        max_headers_count: DEFAULT_HEAD_LIMITS.maxHeaders,
      },
      max_request_headers_kb: DEFAULT_HEAD_LIMITS.maxHeadBytes / 1024,
    },
  };
}

/**
 * The HTTP settings a listener applies, under Envoy's HttpConnectionManager field names, as Istio
 * renders `meshConfig.pathNormalization` and `gatewayTopology.numTrustedProxies` (the settings meshd
 * pushed in this proxy's Workload): `use_remote_address` and the trusted hops on gateways only, as
 * Istio sets them. `denial_explanation` (this mesh's own) lists who may read `x-mesh-authz-reason`.
 */
function httpConnectionManager(snapshot: RuntimeSnapshot, gateway: boolean): Record<string, unknown> {
  const settings = settingsInForce(snapshot);
  const path = settings.pathNormalization;
  return {
    path_normalization: path,
    normalize_path: path !== "NONE",
    merge_slashes: path === "MERGE_SLASHES" || path === "DECODE_AND_MERGE_SLASHES",
    path_with_escaped_slashes_action: path === "DECODE_AND_MERGE_SLASHES"
      ? "UNESCAPE_AND_FORWARD"
      : "KEEP_UNCHANGED",
    use_remote_address: gateway,
    xff_num_trusted_hops: gateway ? settings.numTrustedProxies : 0,
    denial_explanation: {
      principals: settings.denialExplanation.principals,
      ip_blocks: settings.denialExplanation.ipBlocks,
    },
    outbound_traffic_policy: settings.outboundTrafficPolicy,
  };
}

/**
 * A gateway's listeners, one per bind port (named as Istio's gateway listeners): a plain-text port's
 * route configuration, or one filter chain per HTTPS server with its SNI names and SDS secret names.
 */
function gatewayListeners(
  bootstrap: BootstrapInfo,
  snapshot: RuntimeSnapshot,
  lastUpdated: LastUpdated,
): unknown[] {
  const address = bootstrap.gatewayAddress;
  if (address === undefined) return [];
  const version = snapshot.versions[XDS_TYPES.routeConfiguration] ?? "";
  const byPort = new Map<number, RouteConfiguration[]>();
  for (const rc of Object.values(snapshot.routes)) {
    byPort.set(rc.bindPort, [...byPort.get(rc.bindPort) ?? [], rc]);
  }
  return [...byPort.entries()].map(([port, rcs]) => ({
    name: `${address}_${port}`,
    active_state: {
      version_info: version,
      last_updated: iso(lastUpdated[XDS_TYPES.routeConfiguration]),
      listener: {
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
        name: `${address}_${port}`,
        address: socket(address, port),
        traffic_direction: "OUTBOUND",
        protocol: gatewayListenerProtocol(rcs.map((rc) => rc.tls?.mode)),
        ...listenerSettings(snapshot, true, bootstrap.connectionLimits),
        ...(rcs.length === 1 && rcs[0].tls === undefined ? { route_config_name: rcs[0].name } : {
          filter_chains: rcs.flatMap((rc) =>
            rc.tls?.mode === "PASSTHROUGH" ? passthroughChains(rc) : [{
              filter_chain_match: { server_names: rc.tls?.sniHosts ?? [] },
              route_config_name: rc.name,
              transport_socket: rc.tls && {
                name: "envoy.transport_sockets.tls",
                mode: rc.tls.mode,
                tls_certificate_sds_secret_configs: [{ name: rc.tls.credentialName }],
                ...(rc.tls.mode === "MUTUAL"
                  ? { validation_context_sds_secret_config: { name: rc.tls.caCredentialName } }
                  : {}),
                tls_params: {
                  tls_minimum_protocol_version: rc.tls.minProtocolVersion || "TLSV1_2",
                  tls_maximum_protocol_version: rc.tls.maxProtocolVersion || "TLSV1_3",
                },
              },
            }]
          ),
        }),
      },
    },
  }));
}

/**
 * A PASSTHROUGH server's filter chains, as Istio's gateway builds them: one per TLS route, matched on
 * its SNI names, with a tcp_proxy to the route's clusters (no TLS termination, no route configuration).
 */
function passthroughChains(rc: RouteConfiguration): unknown[] {
  return (rc.tlsRoutes ?? []).map((r) => ({
    name: r.name,
    filter_chain_match: { server_names: r.sniHosts },
    filters: [{
      name: "envoy.filters.network.tcp_proxy",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
        stat_prefix: rc.name,
        weighted_clusters: {
          clusters: r.destinations.map((d) => ({ name: `outbound|${d.port}||${d.host}`, weight: d.weight })),
        },
      },
    }],
  }));
}

/** Gateway credentials as Envoy's SDS secrets: certificates shown, private keys never. */
function gatewaySecrets(snapshot: RuntimeSnapshot, lastUpdated: LastUpdated): unknown[] {
  const version = snapshot.versions[XDS_TYPES.tlsCredential] ?? "";
  return Object.values(snapshot.credentials).map((c) => ({
    name: c.name,
    version_info: version,
    last_updated: iso(lastUpdated[XDS_TYPES.tlsCredential]),
    source: c.source,
    secret: {
      "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
      name: c.name,
      ...(c.certificateChain !== ""
        ? {
          tls_certificate: {
            certificate_chain: { inline_string: c.certificateChain },
            private_key: { inline_string: "[redacted]" },
          },
        }
        : { validation_context: { trusted_ca: { inline_string: c.caCertificates } } }),
    },
  }));
}

/** When each xDS type (and the certificate) last changed, ms since the epoch. */
export type LastUpdated = Record<string, number>;

function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

function socket(address: string, port: number) {
  return { socket_address: { address, port_value: port } };
}

/** `outbound|<port>||<host>`, Istio's cluster name. */
export function outboundClusterName(port: number, host: string): string {
  return `outbound|${port}||${host}`;
}

/** `inbound|<port>||`. */
export function inboundClusterName(port: number): string {
  return `inbound|${port}||`;
}

function serviceClusters(s: ServiceInfo): { name: string; port: ServiceInfo["ports"][number] }[] {
  return s.hosts.flatMap((host) =>
    s.ports.map((port) => ({ name: outboundClusterName(port.number, host), port }))
  );
}

/** Builds the dump. */
export function buildConfigDump(
  bootstrap: BootstrapInfo,
  snapshot: RuntimeSnapshot,
  lastUpdated: LastUpdated,
  extra: { agent?: unknown; workersApplied?: number[] } = {},
): { configs: Record<string, unknown>[] } {
  const v = snapshot.versions;
  const workloadVersion = v[XDS_TYPES.workload] ?? "";
  const serviceVersion = v[XDS_TYPES.service] ?? "";
  const workloadUpdated = iso(lastUpdated[XDS_TYPES.workload]);
  const serviceUpdated = iso(lastUpdated[XDS_TYPES.service]);

  const bootstrapDump = {
    "@type": DUMP_TYPES.bootstrap,
    bootstrap: {
      node: bootstrap.node,
      admin: { address: socket("127.0.0.1", bootstrap.adminPort) },
      dynamic_resources: {
        ads_config: {
          api_type: "DELTA_GRPC",
          transport_api_version: "V3",
          grpc_services: [{ target_uri: bootstrap.discoveryAddress, tls: !bootstrap.plaintext }],
        },
      },
      ca: { address: bootstrap.caAddress },
      concurrency: bootstrap.concurrency,
    },
    last_updated: iso(bootstrap.startedAt),
  };

  const settings = listenerSettings(snapshot, false, bootstrap.connectionLimits);
  const inboundListeners = bootstrap.inbound.map((l) => {
    const port = snapshot.workload?.inboundMtls.find((p) => p.port === l.port) ??
      snapshot.workload?.defaultMtls;
    return {
      name: `inbound|${l.address}_${l.port}`,
      active_state: {
        version_info: workloadVersion,
        last_updated: workloadUpdated,
        listener: {
          "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
          name: `inbound|${l.address}_${l.port}`,
          address: socket(l.address, l.port),
          traffic_direction: "INBOUND",
          mtls: {
            mode: inboundModeOf(snapshot, l.port),
            policy: port?.policy ?? "",
            scope: port?.scope ?? "",
          },
          default_cluster: inboundClusterName(l.port),
          protocol: inboundListenerProtocol(snapshot.workload, snapshot.services, l.port),
          ...settings,
        },
      },
    };
  });
  const outbound = bootstrap.outbound;
  const listenersDump = {
    "@type": DUMP_TYPES.listeners,
    version_info: workloadVersion,
    dynamic_listeners: [
      ...inboundListeners,
      ...(outbound
        ? [{
          name: `outbound|${outbound.host}_${outbound.port}`,
          active_state: {
            version_info: serviceVersion,
            last_updated: serviceUpdated,
            listener: {
              "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
              name: `outbound|${outbound.host}_${outbound.port}`,
              address: socket(outbound.host, outbound.port),
              traffic_direction: "OUTBOUND",
              protocol: outboundListenerProtocol(snapshot.services, snapshot.routes),
              ...settings,
            },
          },
        }]
        : []),
      ...gatewayListeners(bootstrap, snapshot, lastUpdated),
    ],
  };

  const services = Object.entries(snapshot.services).sort(([a], [b]) => a.localeCompare(b));
  const clustersDump = {
    "@type": DUMP_TYPES.clusters,
    version_info: serviceVersion,
    static_clusters: bootstrap.inbound.map((l) => ({
      cluster: {
        "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        name: inboundClusterName(l.port),
        type: "STATIC",
        load_assignment: {
          cluster_name: inboundClusterName(l.port),
          endpoints: [{ lb_endpoints: [{ endpoint: { address: socket(l.appAddress, l.appPort) } }] }],
        },
      },
      last_updated: iso(bootstrap.startedAt),
    })),
    dynamic_active_clusters: services.flatMap(([key, s]) =>
      serviceClusters(s).map(({ name, port }) => ({
        version_info: serviceVersion,
        last_updated: serviceUpdated,
        cluster: {
          "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
          name,
          type: "EDS",
          service: key,
          port: { name: port.name, number: port.number, protocol: port.protocol },
          resolution: s.resolution,
          location: s.location,
        },
      }))
    ),
  };

  const endpointsDump = {
    "@type": DUMP_TYPES.endpoints,
    version_info: serviceVersion,
    dynamic_endpoint_configs: services.flatMap(([, s]) =>
      serviceClusters(s).map(({ name, port }) => ({
        version_info: serviceVersion,
        last_updated: serviceUpdated,
        endpoint_config: {
          "@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
          cluster_name: name,
          endpoints: [{
            lb_endpoints: s.endpoints.map((e) => ({
              endpoint: {
                address: socket(
                  e.address,
                  e.ports[String(port.number)] ?? e.ports[port.name] ?? port.targetPort,
                ),
              },
              // tls_mode as Istio's EDS metadata gives it: "istio" where automatic mTLS dials mutual TLS.
              metadata: {
                workload: e.workload,
                proxied: e.proxied,
                identity: e.identity,
                tls_mode: dialsMtls(e, port.number) ? "istio" : "disabled",
              },
            })),
          }],
        },
      }))
    ),
  };

  const routeVersion = v[XDS_TYPES.routeConfiguration] ?? "";
  const routesDump = {
    "@type": DUMP_TYPES.routes,
    version_info: routeVersion,
    dynamic_route_configs: Object.values(snapshot.routes).map((rc) => ({
      version_info: routeVersion,
      last_updated: iso(lastUpdated[XDS_TYPES.routeConfiguration]),
      route_config: {
        "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        name: rc.name,
        virtual_hosts: rc.virtualHosts.map((vh) => ({
          name: vh.name,
          domains: vh.domains,
          routes: vh.routes.map((r) => ({
            name: r.name,
            match: r.matches.length === 0
              ? [{ prefix: "/" }]
              : r.matches.map((m) =>
                m.exact !== ""
                  ? { path: m.exact }
                  : m.regex !== ""
                  ? { safe_regex: { regex: m.regex } }
                  : { prefix: m.prefix }
              ),
            route: {
              weighted_clusters: {
                clusters: r.destinations.map((d) => ({
                  name: `outbound|${d.port}||${d.host}`,
                  weight: d.weight,
                })),
              },
              // As Istio writes every route: the VirtualService timeout, 0s (none) by default, and
              // max_grpc_timeout the same (grpc-timeout then applies, capped by a route timeout).
              timeout: duration(r.timeoutMs ?? 0),
              max_grpc_timeout: duration(r.timeoutMs ?? 0),
            },
          })),
        })),
      },
      mesh: { port: rc.port, bind_port: rc.bindPort, gateways: rc.gateways },
    })),
  };

  const cert = snapshot.certificate;
  const certVersion = cert ? iso(cert.notBefore)! : "";
  const secretsDump = {
    "@type": DUMP_TYPES.secrets,
    version_info: certVersion,
    dynamic_active_secrets: [
      ...(cert
        ? [
          {
            name: "default",
            version_info: certVersion,
            last_updated: iso(lastUpdated.certificate),
            secret: {
              "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
              name: "default",
              tls_certificate: {
                certificate_chain: { inline_string: cert.certChainPem },
                private_key: { inline_string: "[redacted]" },
              },
            },
            spiffe_id: cert.spiffeId,
            not_before: iso(cert.notBefore),
            not_after: iso(cert.notAfter),
          },
          {
            name: "ROOTCA",
            version_info: certVersion,
            last_updated: iso(lastUpdated.certificate),
            secret: {
              "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
              name: "ROOTCA",
              validation_context: { trusted_ca: { inline_string: cert.rootsPem } },
            },
          },
        ]
        : []),
      ...gatewaySecrets(snapshot, lastUpdated),
    ],
  };

  const meshDump = {
    "@type": DUMP_TYPES.mesh,
    revision: snapshot.revision,
    versions: snapshot.versions,
    workload: snapshot.workload ?? null,
    authorizations: { version_info: v[XDS_TYPES.authorization] ?? "", resources: snapshot.authorizations },
    jwt_policies: { version_info: v[XDS_TYPES.jwtPolicy] ?? "", resources: snapshot.jwtPolicies },
    agent: extra.agent ?? null,
    workers_applied_revision: extra.workersApplied ?? [],
  };

  return {
    configs: [bootstrapDump, listenersDump, clustersDump, endpointsDump, routesDump, secretsDump, meshDump],
  };
}
