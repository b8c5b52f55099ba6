/**
 * Carries out the network part of a plan: the hub namespace with bridge `br0`, and for meshd and
 * each workload a namespace joined to the bridge by a veth pair (`v<n>` in the hub, `eth0` inside),
 * its address, its iptables rules (meshd's too: DNAT of service VIPs, so that it reaches a jwksUri
 * served in the lab) and its `/etc/netns/<netns>/` hosts and resolv.conf (which
 * `ip netns exec` mounts over /etc). Each namespace and folder is recorded in the state before it
 * is made.
 *
 * @module
 */
import { mustRun } from "./host.ts";
import { hostsFile, ip6tablesRules, iptablesRules, type LabPlan } from "../../shared/internal/lab/plan.ts";

/** Records a namespace or /etc/netns folder before it is made. */
export interface NetworkRecorder {
  netns(name: string): Promise<void>;
  etcNetns(path: string): Promise<void>;
}

const RESOLV_CONF = "# mesh lab: no DNS server; names are in /etc/hosts\noptions attempts:1 timeout:1\n";

/**
 * Adds network namespace `netns` joined to the hub's bridge: a veth pair (`hubLink` in the hub, `eth0`
 * inside) and `address`/24 on eth0, loopback up.
 */
export async function addJoinedNetns(
  hub: string,
  netns: string,
  hubLink: string,
  address: string,
): Promise<void> {
  await mustRun("ip", ["netns", "add", netns]);
  await mustRun("ip", [
    "-n",
    hub,
    "link",
    "add",
    hubLink,
    "type",
    "veth",
    "peer",
    "name",
    "eth0",
    "netns",
    netns,
  ]);
  await mustRun("ip", ["-n", hub, "link", "set", hubLink, "master", "br0", "up"]);
  await mustRun("ip", ["-n", netns, "addr", "add", `${address}/24`, "dev", "eth0"]);
  await mustRun("ip", ["-n", netns, "link", "set", "eth0", "up"]);
  await mustRun("ip", ["-n", netns, "link", "set", "lo", "up"]);
}

/** Makes the hub, meshd's namespace and every workload's namespace. */
export async function createNetwork(plan: LabPlan, record: NetworkRecorder): Promise<void> {
  const hub = plan.lab.hub;
  await record.netns(hub);
  await mustRun("ip", ["netns", "add", hub]);
  await mustRun("ip", ["-n", hub, "link", "set", "lo", "up"]);
  await mustRun("ip", ["-n", hub, "link", "add", "br0", "type", "bridge"]);
  await mustRun("ip", ["-n", hub, "link", "set", "br0", "up"]);
  const hosts = [
    // meshd gets the unproxied rules too: it fetches jwksUri from services of the lab.
    { ...plan.meshd, sidecar: false, own: undefined },
    ...plan.workloads.map((w) => ({
      netns: w.netns,
      address: w.address,
      hubLink: w.hubLink,
      sidecar: w.sidecar,
      own: { namespace: w.namespace, name: w.name, address: w.address },
    })),
  ];
  // Recording is sequential (one state file); the ip and iptables calls of each host run in parallel.
  for (const h of hosts) {
    await record.netns(h.netns);
    await record.etcNetns(`/etc/netns/${h.netns}`);
  }
  await Promise.all(hosts.map(async (h) => {
    await addJoinedNetns(hub, h.netns, h.hubLink, h.address);
    const etc = `/etc/netns/${h.netns}`;
    await Deno.mkdir(etc, { recursive: true });
    await Deno.writeTextFile(`${etc}/hosts`, hostsFile(plan, h.own));
    await Deno.writeTextFile(`${etc}/resolv.conf`, RESOLV_CONF);
    for (const rule of iptablesRules(plan, h.sidecar)) {
      await mustRun("ip", ["netns", "exec", h.netns, "iptables", ...rule]);
    }
    // A kernel without IPv6 (no /proc/net/if_inet6) has no ip6tables nat table and no IPv6 to capture.
    for (const rule of hasIpv6() ? ip6tablesRules(h.sidecar) : []) {
      await mustRun("ip", ["netns", "exec", h.netns, "ip6tables", ...rule]);
    }
  }));
}

function hasIpv6(): boolean {
  try {
    return Deno.statSync("/proc/net/if_inet6").isFile;
  } catch {
    return false;
  }
}
