/**
 * IP addresses and CIDR blocks of `ipBlocks`, `remoteIpBlocks` and the `source.ip`, `remote.ip` and
 * `destination.ip` conditions: parsed once into bytes, matched by prefix. IPv4-mapped IPv6
 * addresses (`::ffff:10.0.0.1`, what a dual-stack socket reports) count as their IPv4 address.
 *
 * @module
 */

/**
 * An address's bytes, 4 (IPv4) or 16 (IPv6): a plain array, as allocating a `Uint8Array` costs V8
 * about 200 ns and the proxy parses a peer address per request when a policy has IP blocks.
 */
export type IpBytes = readonly number[];

/** A parsed CIDR block. */
export interface CidrBlock {
  /** 4 bytes (IPv4) or 16 (IPv6). */
  bytes: IpBytes;
  /** Prefix length in bits. */
  prefix: number;
}

/**
 * Dotted decimal, four octets of 1 to 3 digits without leading zeros, each at most 255. Read by hand,
 * as the proxy parses a peer address per request whenever a policy has IP blocks.
 */
function parseV4(text: string): IpBytes | undefined {
  const out = [0, 0, 0, 0];
  let part = 0;
  let n = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || part === 4) return undefined;
      out[part++] = n;
      n = 0;
      digits = 0;
      continue;
    }
    if (c < 0x30 || c > 0x39) return undefined;
    if (digits === 1 && n === 0) return undefined;
    if (++digits > 3) return undefined;
    n = n * 10 + c - 0x30;
    if (n > 255) return undefined;
  }
  return part === 4 ? out : undefined;
}

function parseV6(text: string): IpBytes | undefined {
  let body = text;
  const lastColon = body.lastIndexOf(":");
  if (body.slice(lastColon + 1).includes(".")) {
    // An embedded IPv4 tail (::ffff:1.2.3.4) is the last two groups.
    const v4 = parseV4(body.slice(lastColon + 1));
    if (!v4) return undefined;
    const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
    body = `${body.slice(0, lastColon + 1)}${hex(v4[0], v4[1])}:${hex(v4[2], v4[3])}`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = groups(halves[0]);
  const right = halves.length === 2 ? groups(halves[1]) : [];
  if (!left || !right) return undefined;
  const total = left.length + right.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return undefined;
  const all = [...left, ...new Array<number>(8 - total).fill(0), ...right];
  const out = new Array<number>(16).fill(0);
  all.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/**
 * Parses an IPv4 or IPv6 address (no zone).
 *
 * @returns 4 bytes for IPv4 and IPv4-mapped IPv6, else 16; undefined when it is not an address
 */
export function parseIp(text: string): IpBytes | undefined {
  if (!text.includes(":")) return parseV4(text);
  const v6 = parseV6(text);
  if (v6 && MAPPED_PREFIX.every((b, i) => v6[i] === b)) return v6.slice(12);
  return v6;
}

/**
 * Parses an address or a CIDR block (`10.0.0.0/8`, `2001:db8::/32`); an address alone is a block of
 * one (/32 or /128).
 *
 * @returns the block, or undefined when the text is neither
 */
export function parseCidr(text: string): CidrBlock | undefined {
  const slash = text.indexOf("/");
  const bytes = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!bytes) return undefined;
  const v6Text = text.slice(0, slash < 0 ? text.length : slash).includes(":");
  if (slash < 0) return { bytes, prefix: bytes.length * 8 };
  const p = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > (v6Text ? 128 : 32)) return undefined;
  // An IPv4-mapped block keeps its meaning on the 4-byte form.
  const prefix = v6Text && bytes.length === 4 ? Math.max(0, Number(p) - 96) : Number(p);
  return { bytes, prefix };
}

/** Whether `ip` (from {@link parseIp}) lies in `block`; IPv4 never lies in an IPv6 block. */
export function cidrContains(block: CidrBlock, ip: IpBytes): boolean {
  if (ip.length !== block.bytes.length) return false;
  let bits = block.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i] & mask) !== (block.bytes[i] & mask)) return false;
  }
  return true;
}
