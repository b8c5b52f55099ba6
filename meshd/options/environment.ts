/**
 * meshd's environment variables (meshd seed, "Environment variables"): every variable of the seed's
 * table with its type and default, read and validated in one place, from an injectable map.
 *
 * Values follow Go's syntax, as Istio reads them: bool as strconv.ParseBool (`true`, `false`, `1`,
 * `0`, `t`, `F`, `TRUE`, `False`, ...), int as strconv.Atoi, float as strconv.ParseFloat (decimal
 * forms only), duration as time.ParseDuration (`100ms`, `1h0m0s`). Durations come out in
 * milliseconds (fractional below 1ms). Unlike Istio, which logs a bad value and falls back to the
 * default, a bad value here is an error, so that a typo cannot go unnoticed.
 *
 * @module
 */
import { parseDuration, parseJwksFetchMode } from "../../shared/mod.ts";

/** The registry meshd reads by default, and so the default cluster ID (Istio's `Kubernetes`). */
export const DEFAULT_REGISTRY = "Orchestrator";

/** The value types of the seed's table. */
export type EnvType = "bool" | "string" | "int" | "float" | "duration";

/** One row of the seed's table. */
export interface EnvVar {
  /** The variable's name. */
  readonly name: string;
  /** How its value is parsed. */
  readonly type: EnvType;
  /** The seed's default, as text parsed like a set value; undefined where the seed says 'unset'. */
  readonly default: string | undefined;
  /** The seed's description. */
  readonly description: string;
  /** Smallest accepted value (milliseconds for durations), where a smaller one cannot work. */
  readonly min?: number;
  /** Largest accepted value, where a larger one cannot work (a percentage, a gRPC uint32). */
  readonly max?: number;
}

/** Every variable of the seed's table, in the seed's order. */
export const ENV_VARS = [
  {
    name: "AMBIENT_ENABLE_MULTI_NETWORK",
    type: "bool",
    default: "false",
    description: "Enables ambient multi-network",
  },
  {
    name: "AMBIENT_ENABLE_STATUS",
    type: "bool",
    default: "false",
    description:
      "Writes ambient status messages onto resources; has no leader election, so unsafe with several replicas",
  },
  { name: "AUDIENCE", type: "string", default: undefined, description: "Expected audience in tokens" },
  {
    name: "BYPASS_OVERLOAD_MANAGER_FOR_STATIC_LISTENERS",
    type: "bool",
    default: "true",
    description: "Skip the overload manager for static listeners",
  },
  {
    name: "CA_TRUSTED_NODE_ACCOUNTS",
    type: "string",
    default: undefined,
    description:
      "Service accounts allowed node authentication for certificate requests (creating requests for other identities when a pod with that identity runs on the same node); meant for node proxies",
  },
  {
    name: "CERT_SIGNER_DOMAIN",
    type: "string",
    default: undefined,
    description: "Certificate signer domain",
  },
  {
    name: "CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR",
    type: "bool",
    default: "true",
    description: "Jitter before starting the root cert rotator, below the check interval",
  },
  {
    name: "CA_SELF_SIGNED_CA_CERT_TTL",
    type: "duration",
    default: "87600h0m0s",
    min: 1,
    description: "Lifetime of the self-signed root CA certificate",
  },
  {
    name: "CA_SELF_SIGNED_CA_RSA_KEY_SIZE",
    type: "int",
    default: "2048",
    min: 1024,
    max: 16384,
    description: "RSA key size of self-signed CA certificates",
  },
  {
    name: "CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL",
    type: "duration",
    default: "1h0m0s",
    description:
      "Root cert expiry check and rotation interval; zero or negative disables rotation; suggested above 10 minutes",
  },
  {
    name: "CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE",
    type: "int",
    default: "20",
    min: 0,
    max: 100,
    description: "Grace period percentile for the self-signed root cert",
  },
  {
    name: "CLOUD_PLATFORM",
    type: "string",
    default: undefined,
    description:
      "Cloud platform of the proxy: three public-cloud codes or none; discovered automatically if unset",
  },
  {
    name: "CLUSTER_ID",
    type: "string",
    default: DEFAULT_REGISTRY,
    description: "Cluster and registry this daemon belongs to",
  },
  {
    name: "COMPLIANCE_POLICY",
    type: "string",
    default: undefined,
    description:
      "Empty adds no restriction; fips-140-2 forces a TLS version and cipher subset over all user settings and defaults in all runtime components. Necessary but not sufficient for compliance",
  },
  {
    name: "DEFAULT_WORKLOAD_CERT_TTL",
    type: "duration",
    default: "24h0m0s",
    min: 1,
    description: "Lifetime of issued workload certs when the request sets a non-positive TTL",
  },
  {
    name: "ENABLE_100_CONTINUE_HEADERS",
    type: "bool",
    default: "true",
    description: "Proxy 100-continue headers unchanged",
  },
  {
    name: "ENABLE_AUTO_SNI",
    type: "bool",
    default: "true",
    description: "Set SNI automatically when destination rules do not",
  },
  {
    name: "ENABLE_CA_SERVER",
    type: "bool",
    default: "true",
    description: "When false, no CA server is created",
  },
  {
    name: "ENABLE_DEBUG_ON_HTTP",
    type: "bool",
    default: "true",
    description: "When false, the debug interface is off (recommended for production)",
  },
  {
    name: "ENABLE_DEFERRED_STATS_CREATION",
    type: "bool",
    default: "true",
    description: "Lazily initialize some stats",
  },
  {
    name: "ENABLE_ENHANCED_DESTINATIONRULE_MERGE",
    type: "bool",
    default: "true",
    description: "Merge destination rules by exportTo; unequal exportTo keeps rules separate",
  },
  {
    name: "ENABLE_HCM_INTERNAL_NETWORKS",
    type: "bool",
    default: "false",
    description: "Treat endpoints in mesh networks as internal addresses in the HTTP connection manager",
  },
  {
    name: "ENABLE_INBOUND_RETRY_POLICY",
    type: "bool",
    default: "true",
    description: "Retry inbound requests reset before reaching the service",
  },
  {
    name: "ENABLE_INGRESS_WAYPOINT_ROUTING",
    type: "bool",
    default: "false",
    description:
      "Gateways call service waypoints when the Service carries the label mesh.io/ingress-use-waypoint",
  },
  {
    name: "ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES",
    type: "bool",
    default: "false",
    description: "Enforce selector-based authorization policies as L4 policies in front of the waypoint",
  },
  {
    name: "ENABLE_LEADER_ELECTION",
    type: "bool",
    default: "true",
    description: "Leader election before running controllers; false assumes one daemon instance",
  },
  {
    name: "ENABLE_LOCALITY_WEIGHTED_LB_CONFIG",
    type: "bool",
    default: "false",
    description: "Always set locality-weighted LB config for a cluster",
  },
  {
    name: "ENABLE_MCS_AUTO_EXPORT",
    type: "bool",
    default: "false",
    description: "Auto-generate ServiceExport for every mesh service except cluster-local ones",
  },
  {
    name: "ENABLE_MCS_CLUSTER_LOCAL",
    type: "bool",
    default: "false",
    description:
      "Treat <svc>.<namespace>.svc.cluster.local per the multi-cluster services spec (same-cluster endpoints only); requires ENABLE_MCS_SERVICE_DISCOVERY and ENABLE_MCS_HOST",
  },
  {
    name: "ENABLE_MCS_HOST",
    type: "bool",
    default: "false",
    description:
      "Configure <svc>.<namespace>.svc.clusterset.local for exported services; DNS must resolve it; requires ENABLE_MCS_SERVICE_DISCOVERY",
  },
  {
    name: "ENABLE_MCS_SERVICE_DISCOVERY",
    type: "bool",
    default: "false",
    description: "Endpoints are discoverable only in their cluster unless exported",
  },
  {
    name: "ENABLE_MULTICLUSTER_HEADLESS",
    type: "bool",
    default: "true",
    description: "Headless-service DNS resolves to same-network endpoints in any cluster",
  },
  {
    name: "ENABLE_NATIVE_SIDECARS",
    type: "bool",
    default: "false",
    description: "Use the orchestrator's native sidecar containers",
  },
  {
    name: "ENABLE_PROBE_KEEPALIVE_CONNECTIONS",
    type: "bool",
    default: "false",
    description: "Readiness probes keep the agent-to-application connection alive",
  },
  {
    name: "ENABLE_SELECTOR_BASED_ORCH_GATEWAY_POLICY",
    type: "bool",
    default: "true",
    description: "When false, gateway-API gateways ignore workload-selector policies",
  },
  {
    name: "ENABLE_TLS_ON_SIDECAR_INGRESS",
    type: "bool",
    default: "false",
    description: "TLS config on Sidecar.ingress takes effect",
  },
  {
    name: "ENABLE_VTPROTOBUF",
    type: "bool",
    default: "true",
    description: "Optimized protobuf marshaling (needs a matching build)",
  },
  {
    name: "EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY",
    type: "bool",
    default: "true",
    description: "Default retry policy excludes unsafe retry on 503",
  },
  {
    name: "EXTERNAL_CA",
    type: "string",
    default: undefined,
    description: "External CA integration; permitted value MESHD_RA_ORCH_API",
  },
  {
    name: "EXTERNAL_MESHD",
    type: "bool",
    default: "false",
    description: "One daemon controls remote clusters including CA",
  },
  {
    name: "CLOUDA_METADATA",
    type: "string",
    default: undefined,
    description: "Pipe-separated PROJECT_ID|PROJECT_NUMBER|CLUSTER_NAME|CLUSTER_ZONE",
  },
  {
    name: "CLOUDA_QUOTA_PROJECT",
    type: "string",
    default: undefined,
    description: "Quota project for cloud API requests",
  },
  { name: "CLOUDA_ZONE", type: "string", default: undefined, description: "Cloud zone of the workload" },
  {
    name: "GRPC_KEEPALIVE_INTERVAL",
    type: "duration",
    default: "30s",
    description: "gRPC keepalive interval",
  },
  { name: "GRPC_KEEPALIVE_TIMEOUT", type: "duration", default: "10s", description: "gRPC keepalive timeout" },
  {
    name: "HTTP_STRIP_FRAGMENT_FROM_PATH_UNSAFE_IF_DISABLED",
    type: "bool",
    default: "true",
    description: "No description given",
  },
  {
    name: "INBOUND_INTERCEPTION_MODE",
    type: "string",
    default: undefined,
    description: "Inbound redirect mode: REDIRECT or TPROXY",
  },
  { name: "INBOUND_TPROXY_MARK", type: "string", default: undefined, description: "No description given" },
  {
    name: "INJECTION_WEBHOOK_CONFIG_NAME",
    type: "string",
    default: "mesh-sidecar-injector",
    description: "Mutating webhook configuration to patch when the CLI tool is not used",
  },
  {
    name: "INJECT_ENABLED",
    type: "bool",
    default: "true",
    description: "Enable the mutating webhook handler",
  },
  {
    name: "MESHD_CUSTOM_HOST",
    type: "string",
    default: undefined,
    description: "Custom host name(s) the daemon signs its server cert for; comma-separated",
  },
  {
    name: "MESH_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION",
    type: "bool",
    default: "true",
    description:
      "Agent intercepts ECDS updates, downloads the Wasm module and replaces remote load with the local file",
  },
  { name: "MESH_BOOTSTRAP", type: "string", default: undefined, description: "No description given" },
  {
    name: "MESH_DELTA_XDS",
    type: "bool",
    default: "true",
    description: "Send only deltas on resource requests (unchanged items may still be sent)",
  },
  { name: "MESH_DUAL_STACK", type: "bool", default: "false", description: "Dual-stack feature" },
  {
    name: "MESH_ENABLE_CONTROLLER_QUEUE_METRICS",
    type: "bool",
    default: "false",
    description: "Publish queue depth, latency and processing-time metrics",
  },
  {
    name: "MESH_ENABLE_HTTP2_PROBING",
    type: "bool",
    default: "true",
    description: "HTTP/2 probes for HTTPS probes",
  },
  {
    name: "MESH_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS",
    type: "bool",
    default: "false",
    description: "Extra IPv4 outbound listener in IPv6-only clusters",
  },
  {
    name: "MESH_GPRC_MAXRECVMSGSIZE",
    type: "int",
    default: "4194304",
    min: 1,
    max: 2147483647,
    description: "Max receive buffer of a gRPC stream, bytes",
  },
  {
    name: "MESH_GPRC_MAXSTREAMS",
    type: "int",
    default: "100000",
    min: 1,
    max: 4294967295,
    description: "Max concurrent gRPC streams",
  },
  {
    name: "MESH_ORCH_CLIENT_CONTENT_TYPE",
    type: "string",
    default: "protobuf",
    description: "Content type for orchestrator clients: protobuf or json",
  },
  {
    name: "MESH_MULTIROOT_MESH",
    type: "bool",
    default: "false",
    description: "Accept certs signed by more than one trust anchor for mesh-mutual TLS",
  },
  {
    name: "MESH_OUTBOUND_IPV4_LOOPBACK_CIDR",
    type: "string",
    default: "127.0.0.1/32",
    description: "IPv4 range identifying outbound loopback traffic meant for the application",
  },
  {
    name: "MESH_OUTBOUND_OWNER_GROUPS",
    type: "string",
    default: "*",
    description:
      "Comma-separated groups (name or numeric GID) whose outgoing traffic is redirected; * is all",
  },
  {
    name: "MESH_OUTBOUND_OWNER_GROUPS_EXCLUDE",
    type: "string",
    default: undefined,
    description: "Groups excluded from redirection; only when all groups are redirected",
  },
  {
    name: "MESH_PROMETHEUS_ANNOTATIONS",
    type: "string",
    default: undefined,
    description: "No description given",
  },
  {
    name: "MESH_WATCH_NAMESPACE",
    type: "string",
    default: undefined,
    description: "Limit watches to one namespace (only one allowed)",
  },
  {
    name: "MESH_WORKLOAD_ENTRY_VALIDATE_IDENTITY",
    type: "bool",
    default: "true",
    description:
      "Validate that workload identity equals its WorkloadEntry identity for health checks and auto-registration; kept for compatibility, to be removed",
  },
  {
    name: "JWKS_RESOLVER_INSECURE_SKIP_VERIFY",
    type: "bool",
    default: "false",
    description: "Skip certificate verification of the JWKS server",
  },
  {
    name: "JWT_RULE",
    type: "string",
    default: undefined,
    description: "JWT rule used for the daemon's own authentication",
  },
  {
    name: "ORCH_INGRESS_NS",
    type: "string",
    default: "mesh-system",
    description: "Namespace of the ingress controller",
  },
  { name: "ORCH_SIGNER", type: "string", default: undefined, description: "Orchestrator CA signer type" },
  {
    name: "ORCH_SERVICE_HOST",
    type: "string",
    default: undefined,
    description: "Orchestrator service host, set automatically in-cluster",
  },
  {
    name: "K_REVISION",
    type: "string",
    default: undefined,
    description: "Serverless revision, when running there",
  },
  {
    name: "LABEL_CANONICAL_SERVICES_FOR_MESH_EXTERNAL_SERVICE_ENTRIES",
    type: "bool",
    default: "false",
    description: "Populate canonical-service metadata for ServiceEntry endpoints of location mesh_external",
  },
  {
    name: "LOCAL_CLUSTER_SECRET_WATCHER",
    type: "bool",
    default: "false",
    description: "Cluster secret watcher watches the external cluster's namespace",
  },
  {
    name: "MAX_WORKLOAD_CERT_TTL",
    type: "duration",
    default: "2160h0m0s",
    min: 1,
    description: "Max lifetime of issued workload certs",
  },
  {
    name: "MCS_API_GROUP",
    type: "string",
    default: "multicluster.x-k8s.io",
    description: "API group for the multi-cluster services API",
  },
  { name: "MCS_API_VERSION", type: "string", default: "v1alpha1", description: "API version for the same" },
  {
    name: "METRICS_LOCALHOST_ACCESS_ONLY",
    type: "bool",
    default: "false",
    description: "Metrics endpoint reachable only from localhost",
  },
  {
    name: "METRIC_GRACEFUL_DELETION_INTERVAL",
    type: "duration",
    default: "5m0s",
    description: "Metric expiry deletion interval; no effect if rotation is off",
  },
  {
    name: "METRIC_ROTATION_INTERVAL",
    type: "duration",
    default: "0s",
    description: "Metric scope rotation; 0 disables",
  },
  {
    name: "MUTEX_PROFILE_FRACTION",
    type: "int",
    default: "1000",
    description: "Mutex profiling rate 1/N of events; 0 disables",
  },
  {
    name: "DISCO_ALLOW_SIDECAR_SERVICE_INBOUND_LISTENER_MERGE",
    type: "bool",
    default: "false",
    description: "Allow inbound listeners for service ports and sidecar ingress listeners",
  },
  {
    name: "DISCO_ANALYSIS_INTERVAL",
    type: "duration",
    default: "10s",
    description: "Analyzer run interval when analysis is on",
  },
  {
    name: "DISCO_AUTO_ALLOW_WAYPOINT_POLICY",
    type: "bool",
    default: "false",
    description: "Node proxy gets synthetic ALLOW policies for each workload naming the waypoint's identity",
  },
  {
    name: "DISCO_CERT_PROVIDER",
    type: "string",
    default: "meshd",
    description:
      "Provider of the daemon's DNS cert: orchestrator RA for k8s.io/NAME, meshd signs with built-in CA, other values issue no certs but still distribute the root cert. Used only when custom certs are not mounted",
  },
  {
    name: "DISCO_CONVERT_SIDECAR_SCOPE_CONCURRENCY",
    type: "int",
    default: "1",
    description: "Concurrency of SidecarScope conversions",
  },
  {
    name: "DISCO_DEBOUNCE_AFTER",
    type: "duration",
    default: "100ms",
    min: 0,
    description: "Debounce delay for config/registry events",
  },
  {
    name: "DISCO_DEBOUNCE_MAX",
    type: "duration",
    default: "10s",
    min: 0,
    description: "Max debounce wait before a push is triggered",
  },
  {
    name: "DISCO_DISABLE_MX_ALPN",
    type: "bool",
    default: "false",
    description: "Omit the peer-exchange ALPN from TLS handshake config",
  },
  {
    name: "DISCO_DNS_CARES_UDP_MAX_QUERIES",
    type: "string",
    default: "100",
    description: "udp_max_queries of the DNS resolver (0 is unlimited)",
  },
  {
    name: "DISCO_DNS_JITTER_DURATION",
    type: "duration",
    default: "100ms",
    description: "Jitter on periodic DNS resolution",
  },
  {
    name: "DISCO_DRAINING_LABEL",
    type: "string",
    default: "mesh.io/draining",
    description: "Endpoints carrying this label are sent with status DRAINING; empty disables",
  },
  {
    name: "DISCO_ENABLE_ALPHA_GATEWAY_API",
    type: "bool",
    default: "false",
    description: "Alpha gateway-API support (CRDs must be installed)",
  },
  {
    name: "DISCO_ENABLE_ALPN_FILTER",
    type: "bool",
    default: "true",
    description: "Add ALPN filters needed for protocol sniffing",
  },
  {
    name: "DISCO_ENABLE_AMBIENT",
    type: "bool",
    default: "false",
    description: "Master switch for ambient mode",
  },
  {
    name: "DISCO_ENABLE_AMBIENT_WAYPOINTS",
    type: "bool",
    default: "false",
    description: "Run the controllers ambient needs",
  },
  {
    name: "DISCO_ENABLE_ANALYSIS",
    type: "bool",
    default: "false",
    description: "Run analyzers and write errors into resource status",
  },
  {
    name: "DISCO_ENABLE_CDS_CACHE",
    type: "bool",
    default: "true",
    description: "Cache CDS responses (needs DISCO_ENABLE_XDS_CACHE)",
  },
  {
    name: "DISCO_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY",
    type: "bool",
    default: "true",
    description: "Read WorkloadEntry from other clusters",
  },
  {
    name: "DISCO_ENABLE_EDS_DEBOUNCE",
    type: "bool",
    default: "true",
    description: "Include EDS pushes in debouncing",
  },
  {
    name: "DISCO_ENABLE_EDS_FOR_HEADLESS_SERVICES",
    type: "bool",
    default: "false",
    description: "Send headless-service endpoints over EDS",
  },
  { name: "DISCO_ENABLE_GATEWAY_API", type: "bool", default: "true", description: "Gateway-API support" },
  {
    name: "DISCO_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER",
    type: "bool",
    default: "true",
    description: "Auto-provision deployments and services for gateway resources",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API_GATEWAYCLASS_CONTROLLER",
    type: "bool",
    default: "true",
    description: "Create and manage default GatewayClasses",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API_STATUS",
    type: "bool",
    default: "true",
    description: "Write status on gateway-API resources",
  },
  {
    name: "DISCO_ENABLE_IP_AUTOALLOCATE",
    type: "bool",
    default: "true",
    description: "Assign IPs to ServiceEntry without one",
  },
  {
    name: "DISCO_ENABLE_ORCH_SELECT_WORKLOAD_ENTRIES",
    type: "bool",
    default: "true",
    description: "Services with selectors select matching workload entries",
  },
  {
    name: "DISCO_ENABLE_METADATA_EXCHANGE",
    type: "bool",
    default: "true",
    description: "Add metadata-exchange filters",
  },
  {
    name: "DISCO_ENABLE_MONGO_FILTER",
    type: "bool",
    default: "true",
    description: "Inject the Mongo network filter",
  },
  {
    name: "DISCO_ENABLE_MYSQL_FILTER",
    type: "bool",
    default: "false",
    description: "Inject the MySQL network filter",
  },
  {
    name: "DISCO_ENABLE_NODE_UNTAINT_CONTROLLERS",
    type: "bool",
    default: "false",
    description: "Run the controller that untaints nodes whose CNI pods are ready",
  },
  {
    name: "DISCO_ENABLE_PERSISTENT_SESSION_FILTER",
    type: "bool",
    default: "false",
    description: "Persistent-session filter for services labelled by DISCO_PERSISTENT_SESSION_LABEL",
  },
  {
    name: "DISCO_ENABLE_QUIC_LISTENERS",
    type: "bool",
    default: "false",
    description:
      "QUIC listeners where TLS is terminated and the gateway exposes a UDP port of the same number",
  },
  {
    name: "DISCO_ENABLE_RDS_CACHE",
    type: "bool",
    default: "true",
    description: "Cache RDS responses (needs DISCO_ENABLE_XDS_CACHE)",
  },
  {
    name: "DISCO_ENABLE_REDIS_FILTER",
    type: "bool",
    default: "false",
    description: "Inject the Redis network filter",
  },
  {
    name: "DISCO_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION",
    type: "bool",
    default: "true",
    description: "Merge virtual hosts with identical routes",
  },
  {
    name: "DISCO_ENABLE_SENDING_HBONE",
    type: "bool",
    default: "false",
    description: "Allow HBONE when sending",
  },
  {
    name: "DISCO_ENABLE_SERVICEENTRY_SELECT_PODS",
    type: "bool",
    default: "true",
    description: "Service entries with selectors select pods",
  },
  {
    name: "DISCO_ENABLE_SIDECAR_LISTENING_HBONE",
    type: "bool",
    default: "false",
    description: "HBONE can be configured for proxies",
  },
  {
    name: "DISCO_ENABLE_TELEMETRY_LABEL",
    type: "bool",
    default: "true",
    description: "Telemetry metadata on cluster and endpoint resources",
  },
  {
    name: "DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION",
    type: "bool",
    default: "true",
    description: "Auto-register WorkloadEntries from WorkloadGroups on xDS connect",
  },
  {
    name: "DISCO_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS",
    type: "bool",
    default: "true",
    description: "Health-check WorkloadEntries per WorkloadGroup config",
  },
  { name: "DISCO_ENABLE_XDS_CACHE", type: "bool", default: "true", description: "Cache xDS responses" },
  {
    name: "DISCO_ENABLE_XDS_IDENTITY_CHECK",
    type: "bool",
    default: "true",
    description: "Authorize xDS clients to act only as namespaces they may",
  },
  {
    name: "DISCO_ENDPOINT_TELEMETRY_LABEL",
    type: "bool",
    default: "true",
    description: "Telemetry metadata on endpoint resources",
  },
  {
    name: "DISCO_PROXY_FILTER_STATS",
    type: "bool",
    default: "false",
    description: "Collect metrics on proxy filter operations",
  },
  {
    name: "DISCO_FILTER_GATEWAY_CLUSTER_CONFIG",
    type: "bool",
    default: "false",
    description: "Send gateways only clusters referenced by their virtual services",
  },
  {
    name: "DISCO_GATEWAY_API_CONTROLLER_NAME",
    type: "string",
    default: "mesh.io/gateway-controller",
    description: "Only gateway-API resources of a GatewayClass with this controller name are reconciled",
  },
  {
    name: "DISCO_GATEWAY_API_DEFAULT_GATEWAYCLASS_NAME",
    type: "string",
    default: "mesh",
    description: "Default GatewayClass name",
  },
  {
    name: "DISCO_HTTP10",
    type: "bool",
    default: "false",
    description: "HTTP/1.0 on outbound HTTP listeners",
  },
  {
    name: "DISCO_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS",
    type: "string",
    default: undefined,
    description:
      "Comma-separated allowed insecure orchestrator-config auth options (auth providers, clientKey, clientCertificate, tokenFile, exec)",
  },
  {
    name: "DISCO_JWT_ENABLE_REMOTE_JWKS",
    type: "string",
    default: "false",
    description:
      "Who fetches JWKS from jwksUri: meshd or false = daemon; hybrid or true = proxy, falling back to daemon when the JWKS server is external; proxy = proxy (OIDC discovery: always the daemon)",
  },
  {
    name: "DISCO_JWT_PUB_KEY_REFRESH_INTERVAL",
    type: "duration",
    default: "20m0s",
    description: "Daemon refresh interval for jwks_uri keys",
  },
  {
    name: "DISCO_MAX_REQUESTS_PER_SECOND",
    type: "float",
    default: "0",
    min: 0,
    description: "Incoming xDS requests per second; 0 or unset sizes it from the machine",
  },
  {
    name: "DISCO_MULTI_NETWORK_DISCOVER_GATEWAY_API",
    type: "bool",
    default: "true",
    description: "Discover labelled gateway objects as multi-network gateways",
  },
  {
    name: "DISCO_MX_ADDITIONAL_LABELS",
    type: "string",
    default: undefined,
    description: "Extra labels for the metadata-exchange filter, comma-separated",
  },
  {
    name: "DISCO_PERSISTENT_SESSION_HEADER_LABEL",
    type: "string",
    default: "mesh.io/persistent-session-header",
    description: "Services with this label use header-based persistent sessions",
  },
  {
    name: "DISCO_PERSISTENT_SESSION_LABEL",
    type: "string",
    default: "mesh.io/persistent-session",
    description: "Services with this label use cookie-based persistent sessions",
  },
  {
    name: "DISCO_PREFER_SENDING_HBONE",
    type: "bool",
    default: "false",
    description: "Prefer HBONE when sending",
  },
  {
    name: "DISCO_PUSH_THROTTLE",
    type: "int",
    default: "0",
    min: 0,
    description: "Concurrent pushes; 0 or unset sizes it from the machine",
  },
  {
    name: "DISCO_REMOTE_CLUSTER_TIMEOUT",
    type: "duration",
    default: "30s",
    description: "After this the daemon may become ready without syncing remote-secret clusters; 0 disables",
  },
  {
    name: "DISCO_SCOPE_GATEWAY_TO_NAMESPACE",
    type: "bool",
    default: "false",
    description: "A gateway workload selects only gateway resources of its own namespace",
  },
  {
    name: "DISCO_SEND_UNHEALTHY_ENDPOINTS",
    type: "bool",
    default: "false",
    description: "Include unhealthy endpoints in EDS pushes and disable the proxy's panic threshold",
  },
  {
    name: "DISCO_SIDECAR_USE_REMOTE_ADDRESS",
    type: "bool",
    default: "false",
    description: "useRemoteAddress on sidecar outbound listeners",
  },
  {
    name: "DISCO_SKIP_VALIDATE_TRUST_DOMAIN",
    type: "bool",
    default: "false",
    description: "Skip same-trust-domain check when mutual TLS is on",
  },
  { name: "DISCO_STATUS_BURST", type: "int", default: "500", description: "Burst of status updates" },
  {
    name: "DISCO_STATUS_MAX_WORKERS",
    type: "int",
    default: "100",
    description: "Max status workers; fewer raises latency",
  },
  { name: "DISCO_STATUS_QPS", type: "int", default: "100", description: "QPS of status updates" },
  {
    name: "DISCO_STATUS_UPDATE_INTERVAL",
    type: "duration",
    default: "500ms",
    description: "Interval to update xDS distribution status",
  },
  {
    name: "DISCO_TRACE_SAMPLING",
    type: "float",
    default: "1",
    min: 0,
    max: 100,
    description: "Mesh-wide trace sampling percent, 0.0 to 100.0, precision 0.01",
  },
  {
    name: "DISCO_UNIFIED_SIDECAR_SCOPE",
    type: "bool",
    default: "true",
    description: "Unified SidecarScope creation; temporary compatibility flag",
  },
  {
    name: "DISCO_WORKLOAD_ENTRY_GRACE_PERIOD",
    type: "duration",
    default: "10s",
    min: 0,
    description:
      "How long an auto-registered workload may stay disconnected before its WorkloadEntry is cleaned up",
  },
  {
    name: "DISCO_XDS_CACHE_INDEX_CLEAR_INTERVAL",
    type: "duration",
    default: "5s",
    description: "xDS cache index clearing interval",
  },
  { name: "DISCO_XDS_CACHE_SIZE", type: "int", default: "60000", description: "Max xDS cache entries" },
  {
    name: "DISCO_XDS_CACHE_STATS",
    type: "bool",
    default: "false",
    description: "Collect cache efficiency metrics",
  },
  {
    name: "PLATFORM",
    type: "string",
    default: undefined,
    description: "Deployment platform: one of two platform codes",
  },
  { name: "POD_NAME", type: "string", default: undefined, description: "No description given" },
  { name: "POD_NAMESPACE", type: "string", default: "mesh-system", description: "Namespace of the pod" },
  {
    name: "PREFER_DESTINATIONRULE_TLS_FOR_EXTERNAL_SERVICES",
    type: "bool",
    default: "true",
    description: "External services prefer destination-rule TLS over metadata TLS",
  },
  {
    name: "RESOLVE_HOSTNAME_GATEWAYS",
    type: "bool",
    default: "true",
    description: "Resolve load-balancer hostnames at the control plane for cross-network gateways",
  },
  { name: "REVISION", type: "string", default: undefined, description: "No description given" },
  {
    name: "REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION",
    type: "bool",
    default: "false",
    description: "Send readiness probes to localhost instead of the pod IP",
  },
  {
    name: "ROOT_CA_DIR",
    type: "string",
    default: "./etc/cacerts",
    description: "Local or mounted CA root location",
  },
  {
    name: "SHARED_MESH_CONFIG",
    type: "string",
    default: undefined,
    description: "Extra config map for shared mesh config; the standard one wins",
  },
  {
    name: "TOKEN_AUDIENCES",
    type: "string",
    default: "mesh-ca",
    description: "Comma-separated audiences; a token matching any one is accepted before issuing a cert",
  },
  {
    name: "TOKEN_ISSUER",
    type: "string",
    default: undefined,
    description: "OIDC issuer used to check tokens",
  },
  {
    name: "TRUSTED_GATEWAY_CIDR",
    type: "string",
    default: undefined,
    description:
      "Gateway connections from this range are trusted for mechanisms such as XFCC; only for secure networks",
  },
  {
    name: "UNSAFE_ENABLE_ADMIN_ENDPOINTS",
    type: "bool",
    default: "false",
    description: "Expose dangerous admin endpoints on the debug interface; not for production",
  },
  {
    name: "UNSAFE_DISCO_ENABLE_DELTA_TEST",
    type: "bool",
    default: "false",
    description: "Expensive delta-xDS runtime tests; testing only",
  },
  {
    name: "UNSAFE_DISCO_ENABLE_RUNTIME_ASSERTIONS",
    type: "bool",
    default: "false",
    description: "Expensive runtime asserts that panic on failure; testing only",
  },
  {
    name: "USE_CACERTS_FOR_SELF_SIGNED_CA",
    type: "bool",
    default: "false",
    description: "Store the self-signed root in a secret named cacerts",
  },
  {
    name: "USE_REMOTE_CERTS",
    type: "bool",
    default: "false",
    description: "Load CA certs from the config cluster (external daemon)",
  },
  {
    name: "VALIDATION_WEBHOOK_CONFIG_NAME",
    type: "string",
    default: "mesh-mesh-system",
    description: "Validating webhook configuration patched when the CA cert changes; empty disables",
  },
  { name: "XDS_AUTH", type: "bool", default: "true", description: "Authenticate xDS clients" },
  {
    name: "XDS_AUTH_PLAINTEXT",
    type: "bool",
    default: "false",
    description: "Authenticate plain-text requests; for trusted networks",
  },
] as const satisfies readonly EnvVar[];

/** The name of one of {@link ENV_VARS}. */
export type EnvVarName = typeof ENV_VARS[number]["name"];

interface EnvTypeMap {
  bool: boolean;
  string: string;
  int: number;
  float: number;
  duration: number;
}

type EnvValue<V extends EnvVar> = EnvTypeMap[V["type"]] | (V["default"] extends string ? never : undefined);

/**
 * The parsed environment: one member per variable, named as the variable. bool is boolean; int and
 * float are numbers; duration is milliseconds; a variable without a default that is not set is
 * undefined.
 */
export type MeshdEnvironment = { readonly [V in typeof ENV_VARS[number] as V["name"]]: EnvValue<V> };

/**
 * The variables that take effect in this release (issue #3); the others are read and validated but
 * not used yet. POD_NAMESPACE and CLUSTER_ID count because they are the defaults of `--namespace`
 * and `--clusterID`.
 */
export const ENV_VARS_IN_EFFECT: readonly EnvVarName[] = [
  "DISCO_DEBOUNCE_AFTER",
  "DISCO_DEBOUNCE_MAX",
  "DISCO_PUSH_THROTTLE",
  "MESH_GPRC_MAXSTREAMS",
  "MESH_GPRC_MAXRECVMSGSIZE",
  "XDS_AUTH",
  // Debug requests over xDS only: plain-text proxies are not authenticated yet.
  "XDS_AUTH_PLAINTEXT",
  "CA_TRUSTED_NODE_ACCOUNTS",
  "CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR",
  "CA_SELF_SIGNED_CA_CERT_TTL",
  "CA_SELF_SIGNED_CA_RSA_KEY_SIZE",
  "CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL",
  "CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE",
  "DEFAULT_WORKLOAD_CERT_TTL",
  "MAX_WORKLOAD_CERT_TTL",
  "TOKEN_AUDIENCES",
  "ROOT_CA_DIR",
  "ENABLE_CA_SERVER",
  "ENABLE_DEBUG_ON_HTTP",
  "METRICS_LOCALHOST_ACCESS_ONLY",
  "MESH_DELTA_XDS",
  "DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION",
  "DISCO_WORKLOAD_ENTRY_GRACE_PERIOD",
  "DISCO_JWT_ENABLE_REMOTE_JWKS",
  "DISCO_JWT_PUB_KEY_REFRESH_INTERVAL",
  "JWKS_RESOLVER_INSECURE_SKIP_VERIFY",
  "POD_NAMESPACE",
  "CLUSTER_ID",
];

/** A parsed value, or why the text is not one (a phrase that follows the quoted text). */
export type ValueResult<T> = { ok: true; value: T } | { ok: false; reason: string };

const GO_TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const GO_FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go's strconv.ParseBool, which both pflag's bool flags and Istio's bool variables use. */
export function parseGoBool(text: string): ValueResult<boolean> {
  if (GO_TRUE.has(text)) return { ok: true, value: true };
  if (GO_FALSE.has(text)) return { ok: true, value: false };
  return { ok: false, reason: "is not a boolean; use true or false (or 1, 0, t, f, TRUE, FALSE)" };
}

/** Go's largest duration, 2562047h47m16.854775807s, in nanoseconds. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/**
 * Go's time.ParseDuration, in milliseconds: `parseDuration` of shared/ plus Go's range check and a
 * reason for each failure.
 */
export function parseGoDuration(text: string): ValueResult<number> {
  const ns = parseDuration(text);
  if (ns === undefined) {
    const unitless = /^[+-]?(\d+\.?\d*|\.\d+)$/.test(text);
    return {
      ok: false,
      reason: `is not a duration${
        unitless ? ": missing unit" : ""
      }; use Go syntax, for example 500ms, 30s, 1h0m0s`,
    };
  }
  if (ns > MAX_DURATION_NS || ns < -MAX_DURATION_NS - 1n) {
    return { ok: false, reason: "is out of range; the largest duration is 2562047h47m16.854775807s" };
  }
  return { ok: true, value: Number(ns) / 1e6 };
}

/**
 * A whole number as JavaScript holds it exactly. Go's int64 goes further, but no setting here needs
 * such values, and rounding them silently would be worse than refusing them.
 */
export function safeInteger(value: bigint): ValueResult<number> {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    return { ok: false, reason: `is out of range ${Number.MIN_SAFE_INTEGER}..${Number.MAX_SAFE_INTEGER}` };
  }
  return { ok: true, value: Number(value) };
}

function parseInt10(text: string): ValueResult<number> {
  if (!/^[+-]?\d+$/.test(text)) return { ok: false, reason: "is not an integer" };
  return safeInteger(BigInt(text));
}

/** Go's strconv.ParseFloat for decimal text (`80`, `0.5`, `1e3`); Inf, NaN and hex forms are refused. */
export function parseDecimal(text: string): ValueResult<number> {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    return { ok: false, reason: "is not a decimal number, for example 0.5 or 80" };
  }
  const value = Number(text);
  if (!Number.isFinite(value)) return { ok: false, reason: "is out of range" };
  return { ok: true, value };
}

/** A value as error messages show it: bare when plain, JSON-quoted when empty or odd. */
export function showValue(text: string): string {
  return /^[\w.:/*@+,=~-]+$/.test(text) ? text : JSON.stringify(text);
}

type EnvValueOf = boolean | string | number;

function parseValue(spec: EnvVar, text: string): ValueResult<EnvValueOf> {
  let r: ValueResult<number>;
  switch (spec.type) {
    case "string":
      return { ok: true, value: text };
    case "bool":
      return parseGoBool(text);
    case "int":
      r = parseInt10(text);
      break;
    case "float":
      r = parseDecimal(text);
      break;
    case "duration":
      r = parseGoDuration(text);
      break;
  }
  if (!r.ok) return r;
  const unit = spec.type === "duration" ? "ms" : "";
  if (spec.max !== undefined && (r.value < (spec.min ?? -Infinity) || r.value > spec.max)) {
    return { ok: false, reason: `is out of range ${spec.min}${unit}..${spec.max}${unit}` };
  }
  if (spec.min !== undefined && r.value < spec.min) {
    return { ok: false, reason: `is below the minimum ${spec.min}${unit}` };
  }
  return r;
}

/** What {@link readEnvironment} returns. */
export interface EnvironmentResult {
  /**
   * Every variable's value. A variable with a bad value holds its default, so that callers can go on
   * to find the errors of other inputs; do not start anything while `errors` is not empty.
   */
  env: MeshdEnvironment;
  /** One message per bad variable, each naming the variable, the value and the reason. */
  errors: string[];
}

/**
 * Reads and validates every variable of {@link ENV_VARS}. Every bad value is reported, not only the
 * first. An empty value of a bool, int, float or duration variable counts as unset (Go's parsers
 * reject it and Istio then uses the default; manifests often carry `value: ""`); an empty string
 * variable is the empty string.
 *
 * @param source the variables; Deno.env.toObject() by default (needs --allow-env)
 */
export function readEnvironment(
  source: Readonly<Record<string, string | undefined>> = Deno.env.toObject(),
): EnvironmentResult {
  const env: Record<string, EnvValueOf | undefined> = {};
  const errors: string[] = [];
  for (const spec of ENV_VARS as readonly EnvVar[]) {
    const text = source[spec.name];
    const fallback = spec.default === undefined ? undefined : parseValue(spec, spec.default);
    const defaultValue = fallback?.ok ? fallback.value : undefined;
    if (text === undefined || (text === "" && spec.type !== "string")) {
      env[spec.name] = defaultValue;
      continue;
    }
    const r = parseValue(spec, text);
    if (r.ok) env[spec.name] = r.value;
    else {
      errors.push(`environment variable ${spec.name}: ${showValue(text)} ${r.reason}`);
      env[spec.name] = defaultValue;
    }
  }
  const result = env as MeshdEnvironment;
  // Each bound may be fine alone, but with the default above the maximum no default request could
  // ever be signed.
  if (result.DEFAULT_WORKLOAD_CERT_TTL > result.MAX_WORKLOAD_CERT_TTL) {
    const shown = (name: EnvVarName) => source[name] || ENV_VARS.find((v) => v.name === name)?.default;
    errors.push(
      "environment variables DEFAULT_WORKLOAD_CERT_TTL and MAX_WORKLOAD_CERT_TTL: the default " +
        `${shown("DEFAULT_WORKLOAD_CERT_TTL")} is above the maximum ${shown("MAX_WORKLOAD_CERT_TTL")}`,
    );
  }
  try {
    parseJwksFetchMode(result.DISCO_JWT_ENABLE_REMOTE_JWKS);
  } catch (e) {
    errors.push(`environment variable DISCO_JWT_ENABLE_REMOTE_JWKS: ${(e as Error).message}`);
    (env as Record<string, EnvValueOf | undefined>).DISCO_JWT_ENABLE_REMOTE_JWKS = "false";
  }
  return { env: result, errors };
}
