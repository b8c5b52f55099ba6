/**
 * Names and addresses of one lab: its network namespaces, the state directory's place, and the
 * IPv4 plan of its subnet. Pure, so that `lab down` can find what a lab made from its name alone.
 *
 * Everything a lab makes lives in network namespaces named `<lab>_...`: a hub namespace holding the
 * bridge, meshd's namespace, and one per workload. Interfaces are created inside those namespaces
 * (`br0`, `v<n>`, `eth0`), never in the host's, so two labs can only collide by name, and interface
 * names stay far below Linux's 15-character limit whatever the lab is called.
 *
 * @module
 */

/** A lab name: lower-case letters, digits and `-`, starting with a letter, at most 24 characters. */
export const LAB_NAME_PATTERN: RegExp = /^[a-z][a-z0-9-]{0,23}$/;

/** The lab name when neither `--name` nor MESH_LAB_NAME gives one. */
export const DEFAULT_LAB_NAME = "mesh";

/** The lab subnet when neither `--subnet` nor MESH_LAB_SUBNET gives one. */
export const DEFAULT_LAB_SUBNET = "10.213.0.0/24";

/** The first free octet for workloads: .1 is the bridge, .2 meshd. */
const FIRST_WORKLOAD_OCTET = 3;
/** Workload addresses end below this octet; service VIPs take the upper half of the /24. */
const FIRST_VIP_OCTET = 128;

/** A lab's validated name and /24 subnet, and the names derived from them. */
export interface LabNames {
  name: string;
  /** The three leading octets of the /24, e.g. `10.213.0`. */
  prefix: string;
  subnet: string;
  /** The namespace holding the bridge. */
  hub: string;
  /** meshd's namespace. */
  meshd: string;
}

/**
 * Validates a lab name and subnet.
 *
 * @param name a lab name ({@link LAB_NAME_PATTERN})
 * @param subnet an IPv4 /24 in CIDR notation, `a.b.c.0/24`
 * @throws Error naming the value and the reason
 */
export function labNames(name: string, subnet: string): LabNames {
  if (!LAB_NAME_PATTERN.test(name)) {
    throw new Error(
      `lab name ${
        JSON.stringify(name)
      }: use 1 to 24 lower-case letters, digits or "-", starting with a letter`,
    );
  }
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0\/24$/.exec(subnet);
  if (m === null || m.slice(1).some((o) => Number(o) > 255)) {
    throw new Error(`lab subnet ${JSON.stringify(subnet)}: must be an IPv4 /24 such as 10.213.0.0/24`);
  }
  const prefix = m.slice(1, 4).map(Number).join(".");
  return { name, prefix, subnet: `${prefix}.0/24`, hub: `${name}_hub`, meshd: `${name}_meshd` };
}

/** The namespace of a workload: `<lab>_<namespace>_<workload>` (`_` cannot occur in Kubernetes names). */
export function workloadNetns(lab: LabNames, namespace: string, workload: string): string {
  return `${lab.name}_${namespace}_${workload}`;
}

/** Whether a network namespace (or /etc/netns entry) belongs to the lab `name`. */
export function belongsToLab(netns: string, name: string): boolean {
  return netns.startsWith(`${name}_`);
}

/** The bridge's address (the gateway of every namespace). */
export function bridgeAddress(lab: LabNames): string {
  return `${lab.prefix}.1`;
}

/** meshd's address. */
export function meshdAddress(lab: LabNames): string {
  return `${lab.prefix}.2`;
}

/**
 * The address of the `index`th workload (0-based, in topology order).
 *
 * @throws RangeError when the subnet's lower half is full (125 workloads)
 */
export function workloadAddress(lab: LabNames, index: number): string {
  const octet = FIRST_WORKLOAD_OCTET + index;
  if (octet >= FIRST_VIP_OCTET) {
    throw new RangeError(`a lab holds at most ${FIRST_VIP_OCTET - FIRST_WORKLOAD_OCTET} workloads`);
  }
  return `${lab.prefix}.${octet}`;
}

/**
 * The virtual IP of the `index`th service (0-based), like a Kubernetes ClusterIP.
 *
 * @throws RangeError when the subnet's upper half is full (127 services)
 */
export function serviceAddress(lab: LabNames, index: number): string {
  const octet = FIRST_VIP_OCTET + index;
  if (octet > 254) throw new RangeError(`a lab holds at most ${255 - FIRST_VIP_OCTET} services`);
  return `${lab.prefix}.${octet}`;
}

/** The range of service VIPs, the traffic a sidecar captures. */
export function serviceRange(lab: LabNames): string {
  return `${lab.prefix}.${FIRST_VIP_OCTET}/25`;
}
