/**
 * IP address and CIDR checks for policy fields (ipBlocks, source.ip, ServiceEntry addresses).
 *
 * @module
 */

const IPV4 =
  /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;

/** Whether the text is an IPv4 or IPv6 address. */
export function isIp(text: string): boolean {
  if (IPV4.test(text)) return true;
  // Only address characters may reach the URL parser, or "::1]:80" would close the bracket itself.
  if (!text.includes(":") || !/^[0-9A-Fa-f:.]+$/.test(text)) return false;
  try {
    // The URL parser implements the WHATWG IPv6 grammar; it rejects what is not an address.
    new URL(`http://[${text}]/`);
    return true;
  } catch {
    return false;
  }
}

/** Whether the text is an IP address or a CIDR range such as 10.0.0.0/8 or 2001:db8::/32. */
export function isIpOrCidr(text: string): boolean {
  const slash = text.indexOf("/");
  if (slash < 0) return isIp(text);
  const addr = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  if (!isIp(addr) || !/^[0-9]{1,3}$/.test(bits)) return false;
  return Number(bits) <= (addr.includes(":") ? 128 : 32);
}
