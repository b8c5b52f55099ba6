/**
 * The xDS node the agent presents to meshd: Istio's sidecar node id
 * `sidecar~<ip>~<name>.<namespace>~<namespace>.svc.cluster.local` and the metadata meshd reads to
 * find the proxy's workload: `NAMESPACE` and `WORKLOAD_NAME`, or `AUTO_REGISTER_GROUP` and
 * `INSTANCE_IPS` to be auto-registered from a WorkloadGroup.
 *
 * @module
 */
import { isIP } from "node:net";
import { jsonToStruct } from "../../shared/internal/xds/struct.ts";

/** Who this proxy is. */
export interface NodeOptions {
  /** The workload's IP (the first of INSTANCE_IPS). */
  ip: string;
  /** The WorkloadEntry name, or for auto-registration a name for this instance (e.g. the host name). */
  name: string;
  namespace: string;
  /** Auto-register into this WorkloadGroup instead of naming a WorkloadEntry. */
  autoRegisterGroup?: string;
  /** More instance IPs, after `ip`. */
  extraIps?: string[];
  /** Cluster domain; default cluster.local. */
  domain?: string;
  /** Istio's proxy type: `sidecar` (default) or `router` (a gateway). */
  type?: "sidecar" | "router";
  /** Further metadata (strings, numbers, booleans, nested objects), e.g. labels. */
  metadata?: Record<string, unknown>;
}

/** The node as ADS requests carry it, with metadata as google.protobuf.Struct. */
export interface XdsNode {
  id: string;
  cluster: string;
  // deno-lint-ignore no-explicit-any
  metadata: Record<string, any>;
}

/** The node id, `<sidecar|router>~<ip>~<name>.<namespace>~<namespace>.svc.<domain>`. */
export function nodeId(o: NodeOptions): string {
  return `${o.type ?? "sidecar"}~${o.ip}~${o.name}.${o.namespace}~${o.namespace}.svc.${
    o.domain ?? "cluster.local"
  }`;
}

/** The node metadata as plain JSON. */
export function nodeMetadata(o: NodeOptions): Record<string, unknown> {
  const base: Record<string, unknown> = { ...(o.metadata ?? {}), NAMESPACE: o.namespace };
  if (o.autoRegisterGroup) {
    base.AUTO_REGISTER_GROUP = o.autoRegisterGroup;
    base.INSTANCE_IPS = [o.ip, ...(o.extraIps ?? [])].join(",");
  } else {
    base.WORKLOAD_NAME = o.name;
  }
  return base;
}

/**
 * The xDS name (`<namespace>/<name>`) of this proxy's Workload as meshd names it: the WorkloadEntry,
 * or for auto-registration `<group>-<ip with ":" as "-">[-<NETWORK>]` (meshd's autoRegisteredName).
 */
export function workloadKey(o: NodeOptions): string {
  if (!o.autoRegisterGroup) return `${o.namespace}/${o.name}`;
  const network = typeof o.metadata?.NETWORK === "string" ? o.metadata.NETWORK : "";
  const name = [o.autoRegisterGroup, o.ip.replaceAll(":", "-"), ...(network ? [network] : [])].join("-");
  return `${o.namespace}/${name.length > 253 ? name.slice(name.length - 253) : name}`;
}

/**
 * The node of ADS requests.
 *
 * @throws Error when the IP, name or namespace is not usable
 */
export function xdsNode(o: NodeOptions): XdsNode {
  for (const ip of [o.ip, ...(o.extraIps ?? [])]) {
    if (!isIP(ip)) throw new Error(`node: ${JSON.stringify(ip)} is not an IP address`);
  }
  for (const [field, value] of [["name", o.name], ["namespace", o.namespace]] as const) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value)) {
      throw new Error(`node: ${field} ${JSON.stringify(value)} is not a DNS-1123 name`);
    }
  }
  if (o.namespace.includes(".")) {
    throw new Error(`node: namespace ${JSON.stringify(o.namespace)} may not contain dots`);
  }
  return { id: nodeId(o), cluster: `${o.name}.${o.namespace}`, metadata: jsonToStruct(nodeMetadata(o)) };
}
