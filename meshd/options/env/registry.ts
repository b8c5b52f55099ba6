/**
 * meshd's environment variables (meshd seed, "Environment variables") of one component.
 * Config sources, service registries and controllers: cluster identity, Kubernetes and multicluster
 * discovery, WorkloadEntry auto-registration, the Gateway API, status and analysis.
 *
 * Each row has its seed type, default and description; a row with `noEffect` is read and
 * validated but used by nothing yet, and says why.
 *
 * @module
 */
import { DEFAULT_REGISTRY, type EnvVar } from "./env_var.ts";

const IDENTITY_ALWAYS = "a proxy's identity is always checked against its WorkloadEntry";
const NO_AMBIENT = "meshd has no ambient mode";
const NO_AUTOALLOCATE = "ServiceEntries get no automatic addresses";
const NO_GATEWAY_API =
  "no Gateway API support: gateways are configured by Gateway resources of networking.mesh.io";
const NO_HEALTHCHECKS = "WorkloadEntries are not health-checked";
const NO_MULTICLUSTER = "meshd has no multicluster or multi-network support";
const NO_STATUS =
  "meshd runs no analyzers (meshctl analyze does) and writes no distribution status; it writes only validation errors (status.validationMessages)";

/** The variables of this part, in the seed's order. */
export const REGISTRY_ENV = [
  {
    name: "AMBIENT_ENABLE_MULTI_NETWORK",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description: "Enables ambient multi-network",
  },
  {
    name: "AMBIENT_ENABLE_STATUS",
    noEffect: NO_AMBIENT,
    type: "bool",
    default: "false",
    description:
      "Writes ambient status messages onto resources; has no leader election, so unsafe with several replicas",
  },
  {
    name: "CLUSTER_ID",
    type: "string",
    default: DEFAULT_REGISTRY,
    description: "Cluster and registry this daemon belongs to",
  },
  {
    name: "ENABLE_LEADER_ELECTION",
    type: "bool",
    default: "true",
    description: "Leader election before running controllers; false assumes one daemon instance",
  },
  {
    name: "ENABLE_MCS_AUTO_EXPORT",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description: "Auto-generate ServiceExport for every mesh service except cluster-local ones",
  },
  {
    name: "ENABLE_MCS_CLUSTER_LOCAL",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description:
      "Treat <svc>.<namespace>.svc.cluster.local per the multi-cluster services spec (same-cluster endpoints only); requires ENABLE_MCS_SERVICE_DISCOVERY and ENABLE_MCS_HOST",
  },
  {
    name: "ENABLE_MCS_HOST",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description:
      "Configure <svc>.<namespace>.svc.clusterset.local for exported services; DNS must resolve it; requires ENABLE_MCS_SERVICE_DISCOVERY",
  },
  {
    name: "ENABLE_MCS_SERVICE_DISCOVERY",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description: "Endpoints are discoverable only in their cluster unless exported",
  },
  {
    name: "ENABLE_MULTICLUSTER_HEADLESS",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "true",
    description: "Headless-service DNS resolves to same-network endpoints in any cluster",
  },
  {
    name: "EXTERNAL_MESHD",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description: "One daemon controls remote clusters including CA",
  },
  {
    name: "MESH_ORCH_CLIENT_CONTENT_TYPE",
    values: ["protobuf", "json"],
    noEffect:
      "meshd's Kubernetes client asks for JSON always (shared/internal/kube/api_client.ts); the value is checked only",
    type: "string",
    default: "protobuf",
    description: "Content type for orchestrator clients: protobuf or json",
  },
  {
    name: "MESH_WATCH_NAMESPACE",
    type: "string",
    default: undefined,
    description: "Limit watches to one namespace (only one allowed)",
  },
  {
    name: "MESH_WORKLOAD_ENTRY_VALIDATE_IDENTITY",
    noEffect: IDENTITY_ALWAYS,
    type: "bool",
    default: "true",
    description:
      "Validate that workload identity equals its WorkloadEntry identity for health checks and auto-registration; kept for compatibility, to be removed",
  },
  {
    name: "ORCH_INGRESS_NS",
    noEffect: "meshd reads no Kubernetes Ingress resources (gateways are configured by Gateway resources)",
    type: "string",
    default: "mesh-system",
    description: "Namespace of the ingress controller",
  },
  {
    name: "ORCH_SERVICE_HOST",
    noEffect:
      "the in-cluster config is read from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, as client-go reads it",
    type: "string",
    default: undefined,
    description: "Orchestrator service host, set automatically in-cluster",
  },
  {
    name: "LABEL_CANONICAL_SERVICES_FOR_MESH_EXTERNAL_SERVICE_ENTRIES",
    noEffect: "endpoints carry no canonical-service metadata (no telemetry labels from meshd yet)",
    type: "bool",
    default: "false",
    description: "Populate canonical-service metadata for ServiceEntry endpoints of location mesh_external",
  },
  {
    name: "LOCAL_CLUSTER_SECRET_WATCHER",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "false",
    description: "Cluster secret watcher watches the external cluster's namespace",
  },
  {
    name: "MCS_API_GROUP",
    noEffect: NO_MULTICLUSTER,
    type: "string",
    default: "multicluster.x-k8s.io",
    description: "API group for the multi-cluster services API",
  },
  {
    name: "MCS_API_VERSION",
    type: "string",
    default: "v1alpha1",
    noEffect: NO_MULTICLUSTER,
    description: "API version for the same",
  },
  {
    name: "DISCO_ANALYSIS_INTERVAL",
    noEffect: NO_STATUS,
    type: "duration",
    default: "10s",
    description: "Analyzer run interval when analysis is on",
  },
  {
    name: "DISCO_ENABLE_ALPHA_GATEWAY_API",
    noEffect: NO_GATEWAY_API,
    type: "bool",
    default: "false",
    description: "Alpha gateway-API support (CRDs must be installed)",
  },
  {
    name: "DISCO_ENABLE_AMBIENT",
    noEffect: NO_AMBIENT,
    type: "bool",
    default: "false",
    description: "Master switch for ambient mode",
  },
  {
    name: "DISCO_ENABLE_AMBIENT_WAYPOINTS",
    noEffect: NO_AMBIENT,
    type: "bool",
    default: "false",
    description: "Run the controllers ambient needs",
  },
  {
    name: "DISCO_ENABLE_ANALYSIS",
    noEffect: NO_STATUS,
    type: "bool",
    default: "false",
    description: "Run analyzers and write errors into resource status",
  },
  {
    name: "DISCO_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "true",
    description: "Read WorkloadEntry from other clusters",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API",
    type: "bool",
    default: "true",
    noEffect: NO_GATEWAY_API,
    description: "Gateway-API support",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER",
    noEffect: NO_GATEWAY_API,
    type: "bool",
    default: "true",
    description: "Auto-provision deployments and services for gateway resources",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API_GATEWAYCLASS_CONTROLLER",
    noEffect: NO_GATEWAY_API,
    type: "bool",
    default: "true",
    description: "Create and manage default GatewayClasses",
  },
  {
    name: "DISCO_ENABLE_GATEWAY_API_STATUS",
    noEffect: NO_GATEWAY_API,
    type: "bool",
    default: "true",
    description: "Write status on gateway-API resources",
  },
  {
    name: "DISCO_ENABLE_IP_AUTOALLOCATE",
    noEffect: NO_AUTOALLOCATE,
    type: "bool",
    default: "true",
    description: "Assign IPs to ServiceEntry without one",
  },
  {
    name: "DISCO_ENABLE_ORCH_SELECT_WORKLOAD_ENTRIES",
    noEffect: "a Kubernetes Service does not select WorkloadEntries yet (meshd/README.md, Kubernetes)",
    type: "bool",
    default: "true",
    description: "Services with selectors select matching workload entries",
  },
  {
    name: "DISCO_ENABLE_NODE_UNTAINT_CONTROLLERS",
    noEffect: "meshd has no CNI component, so no node untaint controller",
    type: "bool",
    default: "false",
    description: "Run the controller that untaints nodes whose CNI pods are ready",
  },
  {
    name: "DISCO_ENABLE_SERVICEENTRY_SELECT_PODS",
    noEffect:
      "always on: a ServiceEntry's workloadSelector selects the pods of its namespace; it cannot be turned off",
    type: "bool",
    default: "true",
    description: "Service entries with selectors select pods",
  },
  {
    name: "DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION",
    type: "bool",
    default: "true",
    description: "Auto-register WorkloadEntries from WorkloadGroups on xDS connect",
  },
  {
    name: "DISCO_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS",
    noEffect: NO_HEALTHCHECKS,
    type: "bool",
    default: "true",
    description: "Health-check WorkloadEntries per WorkloadGroup config",
  },
  {
    name: "DISCO_GATEWAY_API_CONTROLLER_NAME",
    noEffect: NO_GATEWAY_API,
    type: "string",
    default: "mesh.io/gateway-controller",
    description: "Only gateway-API resources of a GatewayClass with this controller name are reconciled",
  },
  {
    name: "DISCO_GATEWAY_API_DEFAULT_GATEWAYCLASS_NAME",
    noEffect: NO_GATEWAY_API,
    type: "string",
    default: "mesh",
    description: "Default GatewayClass name",
  },
  {
    name: "DISCO_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS",
    noEffect: NO_MULTICLUSTER,
    type: "string",
    default: undefined,
    description:
      "Comma-separated allowed insecure orchestrator-config auth options (auth providers, clientKey, clientCertificate, tokenFile, exec)",
  },
  {
    name: "DISCO_MULTI_NETWORK_DISCOVER_GATEWAY_API",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "true",
    description: "Discover labelled gateway objects as multi-network gateways",
  },
  {
    name: "DISCO_REMOTE_CLUSTER_TIMEOUT",
    noEffect: NO_MULTICLUSTER,
    type: "duration",
    default: "30s",
    description: "After this the daemon may become ready without syncing remote-secret clusters; 0 disables",
  },
  {
    name: "DISCO_STATUS_BURST",
    type: "int",
    default: "500",
    description: "Burst of status updates",
  },
  {
    name: "DISCO_STATUS_MAX_WORKERS",
    noEffect:
      "status.validationMessages are written by one worker, one object at a time (meshd/kube_source/status_writer.ts)",
    type: "int",
    default: "100",
    description: "Max status workers; fewer raises latency",
  },
  {
    name: "DISCO_STATUS_QPS",
    type: "int",
    default: "100",
    description: "QPS of status updates",
  },
  {
    name: "DISCO_STATUS_UPDATE_INTERVAL",
    noEffect: NO_STATUS,
    type: "duration",
    default: "500ms",
    description: "Interval to update xDS distribution status",
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
    name: "RESOLVE_HOSTNAME_GATEWAYS",
    noEffect: NO_MULTICLUSTER,
    type: "bool",
    default: "true",
    description: "Resolve load-balancer hostnames at the control plane for cross-network gateways",
  },
  {
    name: "SHARED_MESH_CONFIG",
    noEffect: "the mesh config comes from --meshConfig only; no mesh-config ConfigMap is read",
    type: "string",
    default: undefined,
    description: "Extra config map for shared mesh config; the standard one wins",
  },
] as const satisfies readonly EnvVar[];
