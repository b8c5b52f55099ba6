/**
 * meshd's environment variables (meshd seed, "Environment variables") of one component.
 * The platform meshd runs on, its own pod identity, and its metrics and debug interfaces.
 *
 * Each row has its seed type, default and description; a row with `noEffect` is read and
 * validated but used by nothing yet, and says why.
 *
 * @module
 */
import type { EnvVar } from "./env_var.ts";

const FIXED_METRICS = "meshd's metrics are a fixed set: no rotation, queue or filter metrics";
const NO_PLATFORM = "meshd reads no platform or cloud metadata";
const NO_PROFILING = "meshd has no profiling interface";
const NO_UNSAFE = "meshd has no such endpoints or runtime checks";
const PROTOBUFJS = "protobuf marshalling is protobufjs";

/** The variables of this part, in the seed's order. */
export const PLATFORM_ENV = [
  {
    name: "CLOUD_PLATFORM",
    values: ["aws", "azure", "gcp", "none"],
    noEffect: NO_PLATFORM,
    type: "string",
    default: undefined,
    description:
      "Cloud platform of the proxy: three public-cloud codes or none; discovered automatically if unset",
  },
  {
    name: "ENABLE_DEBUG_ON_HTTP",
    type: "bool",
    default: "true",
    description: "When false, the debug interface is off (recommended for production)",
  },
  {
    name: "ENABLE_VTPROTOBUF",
    noEffect: PROTOBUFJS,
    type: "bool",
    default: "true",
    description: "Optimized protobuf marshaling (needs a matching build)",
  },
  {
    name: "CLOUDA_METADATA",
    noEffect: NO_PLATFORM,
    type: "string",
    default: undefined,
    description: "Pipe-separated PROJECT_ID|PROJECT_NUMBER|CLUSTER_NAME|CLUSTER_ZONE",
  },
  {
    name: "CLOUDA_QUOTA_PROJECT",
    noEffect: NO_PLATFORM,
    type: "string",
    default: undefined,
    description: "Quota project for cloud API requests",
  },
  {
    name: "CLOUDA_ZONE",
    type: "string",
    default: undefined,
    noEffect: NO_PLATFORM,
    description: "Cloud zone of the workload",
  },
  {
    name: "MESH_ENABLE_CONTROLLER_QUEUE_METRICS",
    noEffect: FIXED_METRICS,
    type: "bool",
    default: "false",
    description: "Publish queue depth, latency and processing-time metrics",
  },
  {
    name: "K_REVISION",
    noEffect: NO_PLATFORM,
    type: "string",
    default: undefined,
    description: "Serverless revision, when running there",
  },
  {
    name: "METRICS_LOCALHOST_ACCESS_ONLY",
    type: "bool",
    default: "false",
    description: "Metrics endpoint reachable only from localhost",
  },
  {
    name: "METRIC_GRACEFUL_DELETION_INTERVAL",
    noEffect: FIXED_METRICS,
    type: "duration",
    default: "5m0s",
    description: "Metric expiry deletion interval; no effect if rotation is off",
  },
  {
    name: "METRIC_ROTATION_INTERVAL",
    noEffect: FIXED_METRICS,
    type: "duration",
    default: "0s",
    description: "Metric scope rotation; 0 disables",
  },
  {
    name: "MUTEX_PROFILE_FRACTION",
    noEffect: NO_PROFILING,
    type: "int",
    default: "1000",
    description: "Mutex profiling rate 1/N of events; 0 disables",
  },
  {
    name: "DISCO_PROXY_FILTER_STATS",
    noEffect: FIXED_METRICS,
    type: "bool",
    default: "false",
    description: "Collect metrics on proxy filter operations",
  },
  {
    name: "PLATFORM",
    values: ["openshift", "gcp"],
    noEffect: NO_PLATFORM,
    type: "string",
    default: undefined,
    description: "Deployment platform: one of two platform codes",
  },
  {
    name: "POD_NAME",
    type: "string",
    default: undefined,
    description: "No description given",
  },
  { name: "POD_NAMESPACE", type: "string", default: "mesh-system", description: "Namespace of the pod" },
  {
    name: "REVISION",
    type: "string",
    default: undefined,
    description: "No description given",
  },
  {
    name: "UNSAFE_ENABLE_ADMIN_ENDPOINTS",
    noEffect: NO_UNSAFE,
    type: "bool",
    default: "false",
    description: "Expose dangerous admin endpoints on the debug interface; not for production",
  },
  {
    name: "UNSAFE_DISCO_ENABLE_DELTA_TEST",
    noEffect: NO_UNSAFE,
    type: "bool",
    default: "false",
    description: "Expensive delta-xDS runtime tests; testing only",
  },
  {
    name: "UNSAFE_DISCO_ENABLE_RUNTIME_ASSERTIONS",
    noEffect: NO_UNSAFE,
    type: "bool",
    default: "false",
    description: "Expensive runtime asserts that panic on failure; testing only",
  },
] as const satisfies readonly EnvVar[];
