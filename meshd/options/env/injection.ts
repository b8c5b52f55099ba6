/**
 * meshd's environment variables (meshd seed, "Environment variables") of one component.
 * Sidecar injection, the webhooks, and the traffic redirection and probes that injection sets up.
 *
 * Each row has its seed type, default and description; a row with `noEffect` is read and
 * validated but used by nothing yet, and says why.
 *
 * @module
 */
import type { EnvVar } from "./env_var.ts";

const NO_INJECTION = "not part of the injection webhook yet (meshd/webhooks/README.md)";

/** The variables of this part, in the seed's order. */
export const INJECTION_ENV = [
  {
    name: "ENABLE_NATIVE_SIDECARS",
    type: "bool",
    default: "false",
    description: "Use the orchestrator's native sidecar containers",
  },
  {
    name: "ENABLE_PROBE_KEEPALIVE_CONNECTIONS",
    noEffect: NO_INJECTION,
    type: "bool",
    default: "false",
    description: "Readiness probes keep the agent-to-application connection alive",
  },
  {
    name: "INBOUND_INTERCEPTION_MODE",
    values: ["REDIRECT", "TPROXY"],
    noEffect: NO_INJECTION,
    type: "string",
    default: undefined,
    description: "Inbound redirect mode: REDIRECT or TPROXY",
  },
  {
    name: "INBOUND_TPROXY_MARK",
    type: "string",
    default: undefined,
    noEffect: NO_INJECTION,
    description: "No description given",
  },
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
    name: "MESH_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION",
    noEffect: NO_INJECTION,
    type: "bool",
    default: "true",
    description:
      "Agent intercepts ECDS updates, downloads the Wasm module and replaces remote load with the local file",
  },
  {
    name: "MESH_BOOTSTRAP",
    type: "string",
    default: undefined,
    noEffect: NO_INJECTION,
    description: "No description given",
  },
  {
    name: "MESH_DUAL_STACK",
    type: "bool",
    default: "false",
    noEffect: NO_INJECTION,
    description: "Dual-stack feature",
  },
  {
    name: "MESH_ENABLE_HTTP2_PROBING",
    noEffect: NO_INJECTION,
    type: "bool",
    default: "true",
    description: "HTTP/2 probes for HTTPS probes",
  },
  {
    name: "MESH_OUTBOUND_IPV4_LOOPBACK_CIDR",
    noEffect: NO_INJECTION,
    type: "string",
    default: "127.0.0.1/32",
    description: "IPv4 range identifying outbound loopback traffic meant for the application",
  },
  {
    name: "MESH_OUTBOUND_OWNER_GROUPS",
    noEffect: NO_INJECTION,
    type: "string",
    default: "*",
    description:
      "Comma-separated groups (name or numeric GID) whose outgoing traffic is redirected; * is all",
  },
  {
    name: "MESH_OUTBOUND_OWNER_GROUPS_EXCLUDE",
    noEffect: NO_INJECTION,
    type: "string",
    default: undefined,
    description: "Groups excluded from redirection; only when all groups are redirected",
  },
  {
    name: "MESH_PROMETHEUS_ANNOTATIONS",
    noEffect: NO_INJECTION,
    type: "string",
    default: undefined,
    description: "No description given",
  },
  {
    name: "REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION",
    noEffect: "the proxy always sends rewritten probes to 127.0.0.1 (the lab sidecar's application listens " +
      "there only; meshd/webhooks/README.md, Probe rewrite)",
    type: "bool",
    default: "false",
    description: "Send readiness probes to localhost instead of the pod IP",
  },
  {
    name: "VALIDATION_WEBHOOK_CONFIG_NAME",
    type: "string",
    default: "mesh-mesh-system",
    description: "Validating webhook configuration patched when the CA cert changes; empty disables",
  },
] as const satisfies readonly EnvVar[];
