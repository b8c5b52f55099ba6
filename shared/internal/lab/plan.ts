/**
 * The lab's plan for a topology: which namespace and address each workload gets, which VIP each
 * service gets, and the names each workload's hosts file resolves. Pure: `lab up` carries it out,
 * `lab status` and the tests read it back from the state file.
 *
 * @module
 */
import {
  bridgeAddress,
  type LabNames,
  meshdAddress,
  serviceAddress,
  serviceRange,
  workloadAddress,
  workloadNetns,
} from "./naming.ts";
import { captureRules, PROXY_GID, PROXY_UID } from "./redirect.ts";
import type { ServicePort, Topology, Workload } from "./topology.ts";

/** meshd's service name, in its serving certificate. */
export const MESHD_HOST = "meshd.mesh-system.svc";

/** The sidecar's admin port (127.0.0.1) and outbound port (127.0.0.1; iptables redirects to it). */
export const SIDECAR_ADMIN_PORT = 15000;
/** See {@link SIDECAR_ADMIN_PORT}. */
export const SIDECAR_OUTBOUND_PORT = 15001;

/** A workload with its place in the lab. */
export interface PlannedWorkload extends Workload {
  netns: string;
  address: string;
  /** The hub's end of the veth pair (`v<n>`); the workload's end is `eth0`. */
  hubLink: string;
}

/** A service with its VIP. */
export interface PlannedService {
  name: string;
  namespace: string;
  vip: string;
  ports: ServicePort[];
  /** The workload behind it. */
  workload: string;
  address: string;
  labels: Record<string, string>;
}

/** Everything `lab up` makes. */
export interface LabPlan {
  lab: LabNames;
  gateway: string;
  meshd: { netns: string; address: string; hubLink: string };
  serviceRange: string;
  workloads: PlannedWorkload[];
  services: PlannedService[];
  /** The topology's meshConfig, meshd's `--meshConfig` file; absent: none. */
  meshConfig?: Record<string, unknown>;
}

/** Plans the lab for a validated topology. */
export function planLab(lab: LabNames, topology: Topology): LabPlan {
  const workloads = topology.workloads.map((w, i) => ({
    ...w,
    netns: workloadNetns(lab, w.namespace, w.name),
    address: workloadAddress(lab, i),
    hubLink: `v${i + 1}`,
  }));
  const services: PlannedService[] = [];
  for (const w of workloads) {
    for (const s of w.services) {
      services.push({
        name: s.name,
        namespace: w.namespace,
        vip: serviceAddress(lab, services.length),
        ports: s.ports,
        workload: w.name,
        address: w.address,
        labels: w.labels,
      });
    }
  }
  return {
    lab,
    gateway: bridgeAddress(lab),
    meshd: { netns: lab.meshd, address: meshdAddress(lab), hubLink: "v0" },
    serviceRange: serviceRange(lab),
    workloads,
    services,
    ...(topology.meshConfig === undefined ? {} : { meshConfig: topology.meshConfig }),
  };
}

/**
 * The hosts file of a workload in namespace `namespace` (or meshd's, without one): like the
 * Kubernetes DNS names of each service, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`,
 * and the bare `<svc>` for services of the workload's own namespace.
 */
export function hostsFile(plan: LabPlan, own?: { namespace: string; name: string; address: string }): string {
  const lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"];
  if (own) lines.push(`${own.address}\t${own.name}`);
  lines.push(`${plan.meshd.address}\t${MESHD_HOST} ${MESHD_HOST}.cluster.local`);
  for (const s of plan.services) {
    const names = [`${s.name}.${s.namespace}`, `${s.name}.${s.namespace}.svc`, serviceHost(s)];
    if (own?.namespace === s.namespace) names.unshift(s.name);
    lines.push(`${s.vip}\t${names.join(" ")}`);
  }
  return lines.join("\n") + "\n";
}

/** The service's fully qualified host name. */
export function serviceHost(s: { name: string; namespace: string }): string {
  return `${s.name}.${s.namespace}.svc.cluster.local`;
}

/** The lab sidecar's capture: every destination, no exclusions (redirect.ts). */
const LAB_CAPTURE = {
  port: SIDECAR_OUTBOUND_PORT,
  proxyUid: PROXY_UID,
  proxyGid: PROXY_GID,
  includeIPRanges: [],
  excludeIPRanges: [],
  excludePorts: [],
};

/**
 * The iptables rules (nat table, OUTPUT chain; argv after `iptables`) of a workload's namespace.
 * With a sidecar, every outbound TCP connection is redirected to the sidecar's outbound listener
 * (redirect.ts {@link captureRules}), except the proxy's own: `lab up` runs it with gid
 * {@link PROXY_GID}. Without one, VIP:port is DNATed to the endpoint's target port, as kube-proxy does.
 */
export function iptablesRules(plan: LabPlan, sidecar: boolean): string[][] {
  const base = ["-w", "-t", "nat", "-A", "OUTPUT", "-p", "tcp"];
  if (sidecar) return captureRules({ ...LAB_CAPTURE, family: 4 });
  return plan.services.flatMap((s) =>
    s.ports.map((p) => [
      ...base,
      "-d",
      `${s.vip}/32`,
      "--dport",
      String(p.port),
      "-j",
      "DNAT",
      "--to-destination",
      `${s.address}:${p.targetPort}`,
    ])
  );
}

/**
 * The ip6tables rules (argv after `ip6tables`) of a workload's namespace: with a sidecar the IPv6
 * capture ({@link captureRules} family 6, to `[::1]:15001`); without one none (the lab's services
 * and workloads have IPv4 addresses only, so there is nothing to DNAT).
 */
export function ip6tablesRules(sidecar: boolean): string[][] {
  return sidecar ? captureRules({ ...LAB_CAPTURE, family: 6 }) : [];
}
