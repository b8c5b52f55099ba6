/**
 * The flag table of `meshd discovery` (meshd seed, "`meshd discovery` flags"): each flag's pflag
 * type, default, description and whether it takes effect yet. ./discovery_flags.ts builds the
 * commander options from it and validates the values.
 *
 * @module
 */
import { type EnvVarName } from "./environment.ts";
import { DEFAULT_REGISTRY } from "./env/env_var.ts";

/** The pflag value types of the seed's table (`Level` is klog's verbosity, an int32). */
export type PflagType =
  | "string"
  | "stringToString"
  | "uint16"
  | "duration"
  | "int"
  | "float32"
  | "bool"
  | "stringArray"
  | "stringSlice"
  | "Level";

/** One row of the seed's flag table. */
export interface DiscoveryFlag {
  /** The long name, without `--`. */
  readonly name: string;
  /** The one-letter short name, without `-`. */
  readonly short?: string;
  /** How the value is parsed, as pflag's type of the same name does. */
  readonly type: PflagType;
  /** The default as pflag would parse it: text, or the items of a list type. */
  readonly default: string | readonly string[];
  /** When the flag is not given, this variable's value (when set) replaces the default. */
  readonly envDefault?: EnvVarName;
  /** The seed's description. */
  readonly description: string;
  /**
   * Whether meshd uses the value in this release; `--help` says "no effect yet" otherwise, and a
   * given value warns. tests/structure/settings_test.ts finds a reader of each "now" flag.
   */
  readonly effect: "now" | "no effect yet";
  /** Why a flag has no effect yet, for `--help`. */
  readonly reason?: string;
  /** Defined on the root command, so that every command accepts it (`--vklog`). */
  readonly global?: boolean;
}

const NO_MULTICLUSTER = "no multicluster support yet";

/** Every flag of `meshd discovery` in the seed's order (`--vklog` belongs to the root command). */
export const DISCOVERY_FLAGS: readonly DiscoveryFlag[] = [
  {
    name: "caCertFile",
    type: "string",
    default: "",
    description: "x509 server CA certificate file",
    effect: "now",
  },
  {
    name: "clusterAliases",
    type: "stringToString",
    default: [],
    description: "Alias names for clusters, as alias=cluster pairs",
    effect: "no effect yet",
    reason: NO_MULTICLUSTER,
  },
  {
    name: "clusterID",
    type: "string",
    default: DEFAULT_REGISTRY,
    envDefault: "CLUSTER_ID",
    description:
      "Cluster ID of this daemon: the topology.istio.io/cluster label of the Kubernetes registry's workloads",
    effect: "now",
  },
  {
    name: "clusterRegistriesNamespace",
    type: "string",
    default: "mesh-system",
    description: "Namespace of the ConfigMap storing cluster configs",
    effect: "no effect yet",
    reason: NO_MULTICLUSTER,
  },
  {
    name: "cniNamespace",
    type: "string",
    default: "mesh-system",
    envDefault: "POD_NAMESPACE",
    description: "Namespace where the CNI component resides",
    effect: "no effect yet",
    reason: "no CNI component yet",
  },
  {
    name: "configDir",
    type: "string",
    default: "",
    description:
      "Directory watched for config YAML files; when set, files replace the resource API client as config source",
    effect: "now",
  },
  {
    name: "ctrlz_address",
    type: "string",
    default: "localhost",
    description: "Listen IP of the introspection facility; * for all",
    effect: "now",
  },
  { name: "ctrlz_port", type: "uint16", default: "9876", description: "Introspection port", effect: "now" },
  {
    name: "domain",
    type: "string",
    default: "cluster.local",
    description: "DNS domain suffix",
    effect: "now",
  },
  {
    name: "grpcAddr",
    type: "string",
    default: ":15010",
    description: "Discovery gRPC address",
    effect: "now",
  },
  {
    // Not in the seed: how meshd serves its gRPC ports (meshd/server/grpc_codec/README.md).
    name: "grpcTransport",
    type: "string",
    default: "codec",
    description:
      "How the gRPC ports are served: codec (in the main process on the project's own HTTP/2 codec, no nghttp2, so a client's GOAWAY cannot abort meshd), children (--servingChildren child processes on grpc-js behind a byte relay; with --servingChildren 0, grpc-js in the main process, exposed to denoland/deno#36788)",
    effect: "now",
  },
  {
    name: "httpAddr",
    type: "string",
    default: ":8080",
    description: "Discovery HTTP address",
    effect: "now",
  },
  {
    name: "httpsAddr",
    type: "string",
    default: ":15017",
    description: "Injection and validation HTTPS address",
    effect: "now",
  },
  {
    name: "keepaliveInterval",
    type: "duration",
    default: "30s",
    description: "Idle time before pinging the peer",
    effect: "now",
  },
  {
    name: "keepaliveMaxServerConnectionAge",
    type: "duration",
    default: "2562047h47m16.854775807s",
    description: "Max age of a server connection before graceful close",
    effect: "now",
  },
  {
    name: "keepaliveTimeout",
    type: "duration",
    default: "10s",
    description: "Wait after a ping before closing",
    effect: "now",
  },
  {
    name: "kubeconfig",
    type: "string",
    default: "",
    description: "Use an orchestrator config file instead of in-cluster config",
    effect: "now",
  },
  {
    name: "orchApiBurst",
    type: "int",
    default: "160",
    description: "Max burst when calling the orchestrator API",
    effect: "now",
  },
  {
    name: "orchApiQPS",
    type: "float32",
    default: "80",
    description: "Max QPS to the orchestrator API",
    effect: "now",
  },
  {
    name: "log_as_json",
    type: "bool",
    default: "false",
    description: "Format log output as JSON",
    effect: "now",
  },
  {
    name: "log_caller",
    type: "string",
    default: "",
    description: "Comma-separated scopes whose log lines include caller info",
    effect: "now",
  },
  {
    name: "log_output_level",
    type: "string",
    default: "",
    description: "Comma-separated <scope>:<level> minimum levels; a bare level applies to all scopes",
    effect: "now",
  },
  {
    name: "log_stacktrace_level",
    type: "string",
    default: "default:none",
    description: "Comma-separated <scope>:<level> at which stack traces are captured",
    effect: "now",
  },
  {
    name: "log_target",
    type: "stringArray",
    default: ["stdout"],
    description: "Log destinations: paths, or stdout, stderr",
    effect: "now",
  },
  {
    name: "meshConfig",
    type: "string",
    default: "./etc/mesh/config/mesh",
    description: "Mesh configuration file; a default mesh is used if absent",
    effect: "now",
  },
  {
    name: "monitoringAddr",
    type: "string",
    default: ":15014",
    description: "Self-monitoring HTTP address",
    effect: "now",
  },
  {
    name: "namespace",
    short: "n",
    type: "string",
    default: "mesh-system",
    envDefault: "POD_NAMESPACE",
    description: "Namespace where the controller resides",
    effect: "now",
  },
  {
    name: "networksConfig",
    type: "string",
    default: "./etc/mesh/config/meshNetworks",
    description: "Mesh networks file; default used if absent",
    effect: "no effect yet",
    reason: "no multi-network support yet",
  },
  {
    name: "profile",
    type: "bool",
    default: "false",
    description: "Enable profiling web interface at host:port/debug/pprof",
    effect: "no effect yet",
    reason: "no profiling interface yet",
  },
  {
    name: "registries",
    type: "stringSlice",
    default: [DEFAULT_REGISTRY],
    description: `Platform registries to read: ${DEFAULT_REGISTRY} and/or Mock`,
    effect: "now",
  },
  {
    name: "secureGRPCAddr",
    type: "string",
    default: ":15012",
    description: "Secured discovery gRPC address",
    effect: "now",
  },
  {
    // Not in the seed: meshd's defence against denoland/deno#36788 (meshd/server/serving/README.md).
    name: "servingChildren",
    type: "int",
    default: "2",
    description:
      "With --grpcTransport children: child processes that serve the gRPC ports behind a byte relay, replaced when one dies; 0 serves with grpc-js in the main process (a client's GOAWAY can then abort meshd, denoland/deno#36788). Unused with the default --grpcTransport codec",
    effect: "now",
  },
  {
    name: "shutdownDuration",
    type: "duration",
    default: "10s",
    description:
      "Time allowed for graceful termination: meshd stops accepting and waits up to this long for certificate requests in flight, then exits without a GOAWAY",
    effect: "now",
  },
  {
    name: "tls-cipher-suites",
    type: "stringSlice",
    default: [],
    description: "Cipher suites for the daemon's TLS server; Go defaults when omitted",
    effect: "no effect yet",
    reason:
      "Deno's TLS stack chooses the suites itself (TLS 1.3 and ECDHE AEAD suites only; no CBC, RC4 or 3DES)",
  },
  {
    name: "tlsCertFile",
    type: "string",
    default: "",
    description: "x509 server certificate file",
    effect: "now",
  },
  {
    name: "tlsKeyFile",
    type: "string",
    default: "",
    description: "x509 private key file matching --tlsCertFile",
    effect: "now",
  },
  {
    name: "vklog",
    type: "Level",
    default: "0",
    description: "Log verbosity, like -v",
    effect: "no effect yet",
    reason: "nothing logs through klog",
    global: true,
  },
];

/** The registries `--registries` accepts. */
export const REGISTRIES: readonly string[] = [DEFAULT_REGISTRY, "Mock"];
