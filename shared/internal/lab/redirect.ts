/**
 * The traffic redirection of the lab's sidecar, as iptables argv (after `iptables`): TCP leaving the
 * workload (nat table, OUTPUT chain) towards a destination range is redirected to the sidecar's
 * outbound listener, which routes by the Host header. `lab up` installs it in a workload's network
 * namespace (plan.ts); meshd's injection webhook installs the same rules from an init container
 * (shared/internal/inject/inject_patch.ts), with the returns a pod needs in front of them.
 *
 * @module
 */

/** The rules' common head: append to the nat table's OUTPUT chain, TCP only. */
const OUTPUT_TCP = ["-w", "-t", "nat", "-A", "OUTPUT", "-p", "tcp"];

/**
 * Redirects TCP towards `destination` (a CIDR; undefined: every destination) to `port`.
 *
 * @returns argv after `iptables`
 */
export function outboundRedirectRule(destination: string | undefined, port: number): string[] {
  return [
    ...OUTPUT_TCP,
    ...(destination === undefined ? [] : ["-d", destination]),
    "-j",
    "REDIRECT",
    "--to-ports",
    String(port),
  ];
}

/**
 * Leaves TCP alone (`-j RETURN`) when it goes to `destination`, or when its socket belongs to
 * `uid`: the sidecar's own connections, so that they are not redirected back into it.
 *
 * @returns argv after `iptables`
 */
export function outboundReturnRule(match: { destination: string } | { uid: number }): string[] {
  const by = "uid" in match ? ["-m", "owner", "--uid-owner", String(match.uid)] : ["-d", match.destination];
  return [...OUTPUT_TCP, ...by, "-j", "RETURN"];
}
