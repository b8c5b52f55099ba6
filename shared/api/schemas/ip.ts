/**
 * IP address and CIDR checks for policy and networking fields (ipBlocks, source.ip conditions,
 * ServiceEntry addresses, Gateway bind), as Go's netip.ParseAddr and ParsePrefix accept them, which
 * is what Istio's ValidateIPAddress and ValidateIPSubnet use.
 *
 * @module
 */
const IPV4 =
  /^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;

function isIpv6(text: string): boolean {
  // Go accepts a zone (fe80::1%eth0) on a plain address.
  const zone = text.indexOf("%");
  const addr = zone < 0 ? text : text.slice(0, zone);
  if (zone >= 0 && zone === text.length - 1) return false;
  let groups = 8;
  let body = addr;
  const lastColon = addr.lastIndexOf(":");
  if (lastColon >= 0 && addr.slice(lastColon + 1).includes(".")) {
    if (!IPV4.test(addr.slice(lastColon + 1))) return false;
    body = addr.slice(0, lastColon + 1) + "0";
    groups = 7;
  }
  const halves = body.split("::");
  if (halves.length > 2) return false;
  const hex = /^[0-9a-fA-F]{1,4}$/;
  const count = (s: string): number | undefined => {
    if (s === "") return 0;
    const parts = s.split(":");
    return parts.every((p) => hex.test(p)) ? parts.length : undefined;
  };
  if (halves.length === 1) return count(halves[0]) === groups;
  const left = count(halves[0]);
  const right = count(halves[1]);
  return left !== undefined && right !== undefined && left + right < groups;
}

/** Whether the text is an IPv4 or IPv6 address (Go's netip.ParseAddr). */
export function isIp(text: string): boolean {
  return IPV4.test(text) || (text.includes(":") && isIpv6(text));
}

/**
 * Whether the text is an address or a CIDR block such as 10.0.0.0/8 (Istio's ValidateIPSubnet).
 * Unlike Go, no zone (`%eth0`): these values are matched against peer and destination addresses,
 * which never carry one, so a zone would make the entry silently match nothing.
 */
export function isIpOrCidr(text: string): boolean {
  if (text.includes("%")) return false;
  const parts = text.split("/");
  if (parts.length === 1) return isIp(text);
  if (parts.length !== 2 || !isIp(parts[0])) return false;
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(parts[1])) return false;
  return Number(parts[1]) <= (parts[0].includes(":") ? 128 : 32);
}
