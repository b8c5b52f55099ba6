/**
 * meshd's environment variables (meshd seed, "Environment variables") of one component.
 * The xDS server: debouncing, push throttling, gRPC limits, caches and delta xDS.
 *
 * Each row has its seed type, default and description; a row with `noEffect` is read and
 * validated but used by nothing yet, and says why.
 *
 * @module
 */
import type { EnvVar } from "./env_var.ts";

const ALL_DEBOUNCED = "every change is debounced, endpoints included";
const DELTA_ALWAYS = "delta xDS is served to every proxy that asks for it; it cannot be turned off";
const KEEPALIVE_FLAGS = "--keepaliveInterval and --keepaliveTimeout set the gRPC keepalive";
const NO_CACHE_INDEX =
  "meshd's xDS cache checks each entry against the message it encoded and keeps no dependent-config index to flush";
const NO_RATE_LIMIT = "xDS requests are not rate-limited";
const NO_SIDECAR_SCOPE = "meshd builds no SidecarScope";

/** The variables of this part, in the seed's order. */
export const PUSH_ENV = [
  {
    name: "GRPC_KEEPALIVE_INTERVAL",
    noEffect: KEEPALIVE_FLAGS,
    type: "duration",
    default: "30s",
    description: "gRPC keepalive interval",
  },
  {
    name: "GRPC_KEEPALIVE_TIMEOUT",
    type: "duration",
    default: "10s",
    noEffect: KEEPALIVE_FLAGS,
    description: "gRPC keepalive timeout",
  },
  {
    name: "MESH_DELTA_XDS",
    noEffect: DELTA_ALWAYS,
    type: "bool",
    default: "true",
    description: "Send only deltas on resource requests (unchanged items may still be sent)",
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
    name: "DISCO_CONVERT_SIDECAR_SCOPE_CONCURRENCY",
    noEffect: NO_SIDECAR_SCOPE,
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
    name: "DISCO_ENABLE_CDS_CACHE",
    needs: "DISCO_ENABLE_XDS_CACHE",
    type: "bool",
    default: "true",
    description: "Cache CDS responses (needs DISCO_ENABLE_XDS_CACHE)",
  },
  {
    name: "DISCO_ENABLE_EDS_DEBOUNCE",
    noEffect: ALL_DEBOUNCED,
    type: "bool",
    default: "true",
    description: "Include EDS pushes in debouncing",
  },
  {
    name: "DISCO_ENABLE_RDS_CACHE",
    needs: "DISCO_ENABLE_XDS_CACHE",
    type: "bool",
    default: "true",
    description: "Cache RDS responses (needs DISCO_ENABLE_XDS_CACHE)",
  },
  {
    name: "DISCO_ENABLE_XDS_CACHE",
    type: "bool",
    default: "true",
    description: "Cache xDS responses",
  },
  {
    name: "DISCO_MAX_REQUESTS_PER_SECOND",
    noEffect: NO_RATE_LIMIT,
    type: "float",
    default: "0",
    min: 0,
    description: "Incoming xDS requests per second; 0 or unset sizes it from the machine",
  },
  {
    name: "DISCO_PUSH_THROTTLE",
    type: "int",
    default: "0",
    min: 0,
    description:
      "Concurrent pushes; 0 or unset: 1000 (not sized from the machine: meshd/README.md, The xDS cache)",
  },
  {
    name: "DISCO_UNIFIED_SIDECAR_SCOPE",
    noEffect: NO_SIDECAR_SCOPE,
    type: "bool",
    default: "true",
    description: "Unified SidecarScope creation; temporary compatibility flag",
  },
  {
    name: "DISCO_XDS_CACHE_INDEX_CLEAR_INTERVAL",
    noEffect: NO_CACHE_INDEX,
    type: "duration",
    default: "5s",
    description: "xDS cache index clearing interval",
  },
  {
    name: "DISCO_XDS_CACHE_SIZE",
    needs: "DISCO_ENABLE_XDS_CACHE",
    type: "int",
    default: "60000",
    description: "Max xDS cache entries",
  },
  {
    name: "DISCO_XDS_CACHE_STATS",
    needs: "DISCO_ENABLE_XDS_CACHE",
    type: "bool",
    default: "false",
    description: "Collect cache efficiency metrics",
  },
] as const satisfies readonly EnvVar[];
