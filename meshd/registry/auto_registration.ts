/**
 * WorkloadEntry auto-registration (DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION), after Istio's
 * pilot/pkg/autoregistration: a proxy that connects naming a WorkloadGroup (node metadata
 * AUTO_REGISTER_GROUP, NAMESPACE and INSTANCE_IPS) gets a WorkloadEntry made from the group's
 * template, named `<group>-<ip>` (colons as dashes; `-<network>` appended when set). The entry lives
 * in meshd's registry, not in the config directory, which meshd never writes. When the proxy
 * disconnects, the entry stays for DISCO_WORKLOAD_ENTRY_GRACE_PERIOD so that a reconnect keeps it;
 * then it is deleted.
 *
 * @module
 */
import type { ConfigResource, OfKind } from "../push_context/push_context.ts";
import type { ProxyNode } from "../xds/ads_types.ts";

/** Counters of the meshd seed (auto_registration_*_total). */
export interface AutoRegistrationHooks {
  onSuccess?(key: string): void;
  onUpdate?(key: string): void;
  onUnregister?(key: string): void;
  onDelete?(key: string): void;
  onError?(reason: string): void;
}

/** Options of {@link AutoRegistry}. */
export interface AutoRegistryOptions {
  /** DISCO_WORKLOAD_ENTRY_GRACE_PERIOD, ms. */
  gracePeriodMs: number;
  /** The WorkloadGroups of the current config: `<namespace>/<name>` to resource. */
  groups(): ReadonlyMap<string, OfKind<"WorkloadGroup">>;
  /** The registry changed: push. */
  onChange(): void;
  hooks?: AutoRegistrationHooks;
}

interface Registration {
  entry: ConfigResource;
  connections: number;
  disconnectedAt?: number;
  timer?: ReturnType<typeof setTimeout>;
}

/** The node metadata that asks for auto-registration, or undefined when the node does not. */
export function autoRegistrationRequest(
  node: ProxyNode,
):
  | { group: string; namespace: string; ip: string; network: string; labels: Record<string, string> }
  | undefined {
  const m = node.metadata;
  const group = typeof m.AUTO_REGISTER_GROUP === "string" ? m.AUTO_REGISTER_GROUP : "";
  if (group === "") return undefined;
  const ips = typeof m.INSTANCE_IPS === "string" ? m.INSTANCE_IPS.split(",").filter((s) => s !== "") : [];
  const fromId = node.id.split("~")[1] ?? "";
  return {
    group,
    namespace: typeof m.NAMESPACE === "string" ? m.NAMESPACE : "",
    ip: ips[0] ?? fromId,
    network: typeof m.NETWORK === "string" ? m.NETWORK : "",
    labels: m.LABELS && typeof m.LABELS === "object" ? m.LABELS as Record<string, string> : {},
  };
}

/** The name of the WorkloadEntry auto-registered for a request (Istio's autoregisteredWorkloadEntryName). */
export function autoRegisteredName(req: { group: string; ip: string; network: string }): string {
  const name = [req.group, req.ip.replaceAll(":", "-"), ...(req.network ? [req.network] : [])].join("-");
  return name.length > 253 ? name.slice(name.length - 253) : name;
}

/** Auto-registered WorkloadEntries, by `<namespace>/<name>`. */
export class AutoRegistry {
  readonly #options: AutoRegistryOptions;
  readonly #entries = new Map<string, Registration>();

  /** @param options the grace period, the WorkloadGroups, and observers */
  constructor(options: AutoRegistryOptions) {
    this.#options = options;
  }

  /** The entries, to merge into the config when the push context is built. */
  entries(): ConfigResource[] {
    return [...this.#entries.values()].map((r) => r.entry);
  }

  /**
   * A proxy connected. Registers or refreshes its WorkloadEntry when it names a WorkloadGroup.
   *
   * @returns the entry's `<namespace>/<name>`, or undefined when the node asks for nothing or the
   *   request is refused (then `reason` says why; the stream still serves, as in Istio)
   */
  connect(node: ProxyNode): { key?: string; reason?: string } {
    const req = autoRegistrationRequest(node);
    if (!req) return {};
    const fail = (reason: string) => {
      this.#options.hooks?.onError?.(reason);
      return { reason };
    };
    if (req.namespace === "") return fail(`auto-registration of ${node.id}: node metadata has no NAMESPACE`);
    if (req.ip === "") return fail(`auto-registration of ${node.id}: node metadata has no INSTANCE_IPS`);
    const group = this.#options.groups().get(`${req.namespace}/${req.group}`);
    if (!group) {
      return fail(`auto-registration of ${node.id}: no WorkloadGroup ${req.namespace}/${req.group}`);
    }
    const name = autoRegisteredName(req);
    const key = `${req.namespace}/${name}`;
    const existing = this.#entries.get(key);
    if (existing) {
      clearTimeout(existing.timer);
      existing.timer = undefined;
      existing.disconnectedAt = undefined;
      existing.connections++;
      this.#options.hooks?.onUpdate?.(key);
      return { key };
    }
    const spec = group.resource.spec;
    const template = spec.template;
    // Labels: node metadata over WorkloadGroup.metadata over the template, as Istio merges them.
    const labels = {
      ...template.labels,
      ...spec.metadata?.labels,
      ...req.labels,
    };
    const entry: ConfigResource = {
      kind: "WorkloadEntry",
      namespace: req.namespace,
      name,
      resource: {
        metadata: {
          name,
          namespace: req.namespace,
          annotations: {
            ...spec.metadata?.annotations,
            "networking.mesh.io/autoRegistrationGroup": req.group,
            "networking.mesh.io/connectedAt": new Date().toISOString(),
          },
        },
        spec: { ...template, address: req.ip, labels, ...(req.network ? { network: req.network } : {}) },
      },
    };
    this.#entries.set(key, { entry, connections: 1 });
    this.#options.hooks?.onSuccess?.(key);
    this.#options.onChange();
    return { key };
  }

  /** A proxy's stream ended; its entry is deleted after the grace period unless it reconnects. */
  disconnect(key: string): void {
    const r = this.#entries.get(key);
    if (!r || --r.connections > 0) return;
    r.disconnectedAt = Date.now();
    this.#options.hooks?.onUnregister?.(key);
    r.timer = setTimeout(() => {
      if (this.#entries.get(key) !== r || r.connections > 0) return;
      this.#entries.delete(key);
      this.#options.hooks?.onDelete?.(key);
      this.#options.onChange();
    }, this.#options.gracePeriodMs);
  }

  /** Cancels the cleanup timers (shutdown). */
  stop(): void {
    for (const r of this.#entries.values()) clearTimeout(r.timer);
  }
}
