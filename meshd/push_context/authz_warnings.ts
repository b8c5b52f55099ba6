/**
 * The AuthorizationPolicy warnings of a push context: rules with HTTP-only fields that apply to a
 * workload with TCP ports, where Istio drops an ALLOW rule and ignores a DENY rule's HTTP-only parts
 * (shared's tcpRuleWarnings; istio#25832, istio#44348). A port is TCP when its service port's protocol
 * (shared/protocol) is not an HTTP one; an auto-detected port counts too, since a connection that is
 * not HTTP is authorized there as TCP.
 *
 * @module
 */
import {
  applicableAuthorizationPolicies,
  authorizationLayer,
  type AuthorizationPolicy,
  authorizationPolicyView,
  httpOnlyFields,
  tcpRuleWarnings,
} from "../../shared/mod.ts";

/** What the warnings read of the push context (its ServiceView, WorkloadView, policy views). */
export interface AuthzWarningInput {
  services: readonly {
    ports: readonly { number: number; protocol: string }[];
    endpoints: readonly { workload: string; ports: Readonly<Record<number, number>> }[];
  }[];
  workloads: ReadonlyMap<string, { namespace: string; labels: Readonly<Record<string, string>> }>;
  policies: readonly Pick<AuthorizationPolicy, "metadata" | "spec">[];
  rootNamespace: string;
}

/** Workloads a warning names before it counts the rest. */
const MAX_NAMED = 5;

/** Each workload's TCP (or auto-detected) endpoint ports with their protocol, e.g. `9000 TCP`. */
function tcpPortsByWorkload(input: AuthzWarningInput): Map<string, Map<number, string>> {
  const out = new Map<string, Map<number, string>>();
  for (const s of input.services) {
    for (const e of s.endpoints) {
      if (e.workload === "") continue;
      for (const p of s.ports) {
        if (authorizationLayer(p.protocol) === "http") continue;
        const port = e.ports[p.number] ?? p.number;
        const ports = out.get(e.workload) ?? new Map<number, string>();
        ports.set(port, p.protocol);
        out.set(e.workload, ports);
      }
    }
  }
  return out;
}

/**
 * One sentence per policy rule with HTTP-only fields that applies to a workload with TCP ports,
 * naming those workloads and ports; sorted, so that an unchanged config gives the same list.
 */
export function tcpAuthorizationWarnings(input: AuthzWarningInput): string[] {
  // Only policies with an HTTP-only field can warn: most have none, so the per-workload walk stays cheap.
  const suspects = input.policies.filter((p) =>
    (p.spec?.rules ?? []).some((r) => httpOnlyFields(r).length > 0)
  );
  if (suspects.length === 0) return [];
  const onByPolicy = new Map<string, string[]>();
  for (const [key, ports] of tcpPortsByWorkload(input)) {
    const w = input.workloads.get(key);
    if (!w) continue;
    const applicable = applicableAuthorizationPolicies(suspects, w, { rootNamespace: input.rootNamespace });
    const list = [...ports].sort(([a], [b]) => a - b).map(([n, p]) => `${n} (${p})`).join(", ");
    for (const p of applicable.all) {
      const k = `${p.namespace}/${p.name}`;
      onByPolicy.set(k, [...onByPolicy.get(k) ?? [], `${key} ports ${list}`]);
    }
  }
  const out: string[] = [];
  for (const policy of suspects) {
    const view = authorizationPolicyView(policy);
    const on = onByPolicy.get(`${view.namespace}/${view.name}`);
    if (!on) continue;
    on.sort();
    // A namespace-wide policy may select thousands of workloads: name a few, count the rest.
    const named = on.length > MAX_NAMED
      ? [...on.slice(0, MAX_NAMED), `${on.length - MAX_NAMED} more workloads`]
      : on;
    for (const w of tcpRuleWarnings([view], `workload ${named.join("; ")}`)) out.push(w.message);
  }
  return out.sort();
}
