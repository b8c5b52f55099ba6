/**
 * The traffic capture of the lab's sidecar, as iptables argv (after `iptables`): TCP leaving the
 * workload (nat table, OUTPUT chain) is REDIRECTed to the sidecar's outbound listener, which reads
 * each connection's original destination (proxy/capture) and routes it (proxy/outbound/dispatch.ts).
 * Like Istio's istio-iptables, every outbound TCP connection is captured, except:
 * - the proxy's own (Istio: `-m owner --uid-owner 1337` and `--gid-owner 1337`): the injected proxy
 *   runs as uid 1337, the lab's as root with gid 1337 (so that it reads its files without a change);
 * - loopback (`-o lo`: 127.0.0.0/8 and the workload's own addresses, as Istio's `-o lo ! --uid-owner
 *   1337 -j RETURN`; this mesh has no inbound capture, so nothing on lo goes to the proxy);
 * - excluded ranges and ports (`traffic.sidecar.istio.io/excludeOutboundIPRanges`,
 *   `excludeOutboundPorts`);
 * and only towards the include ranges when there are some (`includeOutboundIPRanges`; none: all).
 * IPv6 gets the same rules for `ip6tables` ({@link captureRuleSets}), with `::1/128` for 127.0.0.0/8
 * and only the ranges of its family, as istio-iptables splits them (istio/istio
 * tools/istio-iptables/pkg/cmd/run.go `separateV4V6`: `*` is every address of both families; a list
 * names ranges per family, and a family with no include range is not redirected at all).
 * `lab up` installs them in a workload's network namespace (plan.ts); meshd's injection webhook from
 * an init container (shared/internal/inject/inject_patch.ts). Replies to inbound connections are not
 * affected: the nat table sees only a connection's first packet.
 *
 * @module
 */

/** The rules' common head: append to the nat table's OUTPUT chain, TCP only. */
const OUTPUT_TCP = ["-w", "-t", "nat", "-A", "OUTPUT", "-p", "tcp"];

/** Istio's proxy uid and gid (istio-iptables `--proxy-uid`, `--proxy-gid`). */
export const PROXY_UID = 1337;
/** See {@link PROXY_UID}. */
export const PROXY_GID = 1337;

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

/** What a connection must match to be left alone. */
export type ReturnMatch =
  | { destination: string }
  | { uid: number }
  | { gid: number }
  | { port: number }
  | { loopback: true };

/**
 * Leaves TCP alone (`-j RETURN`) when it matches: its destination, its socket's owner (`uid`,
 * `gid`: the sidecar's own connections, so that they are not redirected back into it), its
 * destination port, or the loopback interface.
 *
 * @returns argv after `iptables`
 */
export function outboundReturnRule(match: ReturnMatch): string[] {
  const by = "uid" in match
    ? ["-m", "owner", "--uid-owner", String(match.uid)]
    : "gid" in match
    ? ["-m", "owner", "--gid-owner", String(match.gid)]
    : "port" in match
    ? ["--dport", String(match.port)]
    : "loopback" in match
    ? ["-o", "lo"]
    : ["-d", match.destination];
  return [...OUTPUT_TCP, ...by, "-j", "RETURN"];
}

/** What to capture. */
export interface CaptureRuleOptions {
  /** The outbound listener's port (15001). */
  port: number;
  /** The proxy's uid and gid, whose connections are not captured. */
  proxyUid: number;
  proxyGid: number;
  /** CIDRs to capture; empty: every destination. */
  includeIPRanges: readonly string[];
  /** CIDRs never captured. */
  excludeIPRanges: readonly string[];
  /** Destination ports never captured. */
  excludePorts: readonly number[];
  /** The rules' family (default 4): 6 keeps only the IPv6 ranges and returns `::1/128`. */
  family?: 4 | 6;
}

/** Whether a CIDR is IPv6 (it has a colon). */
function isV6(cidr: string): boolean {
  return cidr.includes(":");
}

/**
 * The capture rules, in order: the returns (the proxy's uid and gid, loopback, 127.0.0.0/8, the
 * excluded ranges and ports), then the REDIRECTs.
 *
 * @returns argv lists after `iptables`
 */
export function captureRules(o: CaptureRuleOptions): string[][] {
  const v6 = o.family === 6;
  const ofFamily = (ranges: readonly string[]) => ranges.filter((r) => isV6(r) === v6);
  const include = ofFamily(o.includeIPRanges);
  return [
    outboundReturnRule({ uid: o.proxyUid }),
    outboundReturnRule({ gid: o.proxyGid }),
    outboundReturnRule({ loopback: true }),
    outboundReturnRule({ destination: v6 ? "::1/128" : "127.0.0.0/8" }),
    ...ofFamily(o.excludeIPRanges).map((destination) => outboundReturnRule({ destination })),
    ...o.excludePorts.map((port) => outboundReturnRule({ port })),
    ...(o.includeIPRanges.length === 0
      ? [outboundRedirectRule(undefined, o.port)]
      : include.map((r) => outboundRedirectRule(r, o.port))),
  ];
}

/** One tool's rules. */
export interface CaptureRuleSet {
  tool: "iptables" | "ip6tables";
  /** argv lists after the tool. */
  rules: string[][];
}

/**
 * The capture rules of both families: `iptables` ({@link captureRules} family 4) then `ip6tables`
 * (family 6). An IPv6 connection is REDIRECTed to `[::1]:port`, where the outbound listener also
 * listens (proxy/outbound/listener.ts), as Envoy's virtualOutbound listener does on a dual-stack pod.
 */
export function captureRuleSets(o: Omit<CaptureRuleOptions, "family">): CaptureRuleSet[] {
  return [
    { tool: "iptables", rules: captureRules({ ...o, family: 4 }) },
    { tool: "ip6tables", rules: captureRules({ ...o, family: 6 }) },
  ];
}
