/**
 * X-Forwarded-For and the trusted client address, as Envoy's HTTP connection manager computes them
 * (envoy docs "HTTP header manipulation: x-forwarded-for"; `ConnectionManagerUtility::
 * mutateRequestHeaders` and `Utility::getLastAddressFromXFF`), with the settings Istio gives it:
 *
 * - **gateways**: `use_remote_address: true`, `xff_num_trusted_hops` = `gatewayTopology.
 *   numTrustedProxies`. The downstream address is appended to XFF (the listener's own address instead
 *   when the peer is loopback, as Envoy). The trusted client address is the N-th XFF entry from the
 *   right *before* appending, or the peer when N is 0, XFF has fewer than N entries, or that entry is
 *   not an IP address. X-Forwarded-Proto is set to the connection's scheme, kept only from a
 *   trusted hop ({@link gatewayForwardedProto}).
 * - **sidecars** (inbound): `use_remote_address: false`, no trusted hops. XFF is forwarded unchanged;
 *   the trusted client address is the rightmost XFF entry when it is an IP address (what the gateway
 *   in front appended), else the peer.
 *
 * The trusted client address is AuthorizationPolicy's `remoteIpBlocks` and `remote.ip`.
 *
 * @module
 */
import { parseIp } from "../policy/authorization/ip_block.ts";

/** The connection and header facts the computation needs. */
export interface ForwardedForInput {
  /** The value of every X-Forwarded-For field of the request, in order (Envoy joins them with `,`). */
  values: readonly string[];
  /** The downstream peer address (no port). */
  peerIp: string;
  /** The address the connection was accepted on (appended instead of a loopback peer). */
  localIp: string;
  /** True on gateways (Envoy's use_remote_address), false on sidecars. */
  useRemoteAddress: boolean;
  /** Trusted hops in front of a gateway (xff_num_trusted_hops); ignored on sidecars, as Istio sets none there. */
  numTrustedProxies: number;
}

/** What the proxy does with the request. */
export interface ForwardedFor {
  /** The trusted client address: `remoteIpBlocks`, `remote.ip`. */
  remoteIp: string;
  /** The X-Forwarded-For value to forward in place of the received fields; null: forward them unchanged. */
  forwardedFor: string | null;
}

/**
 * The trusted client address and the X-Forwarded-For value to forward.
 *
 * @example
 * ```ts
 * forwardedFor({ values: ["6.6.6.6"], peerIp: "10.0.0.9", localIp: "10.0.0.2", useRemoteAddress: true, numTrustedProxies: 0 });
 * // { remoteIp: "10.0.0.9", forwardedFor: "6.6.6.6,10.0.0.9" }
 * ```
 */
export function forwardedFor(input: ForwardedForInput): ForwardedFor {
  const joined = input.values.filter((v) => v !== "").join(",");
  if (!input.useRemoteAddress) {
    return { remoteIp: addressFromRight(joined, 0) ?? input.peerIp, forwardedFor: null };
  }
  const hops = input.numTrustedProxies;
  const remoteIp = (hops > 0 ? addressFromRight(joined, hops - 1) : undefined) ?? input.peerIp;
  const appended = isLoopback(input.peerIp) ? input.localIp : input.peerIp;
  return { remoteIp, forwardedFor: joined === "" ? appended : `${joined},${appended}` };
}

/**
 * The XFF entry `skip` places from the right (0: the last), trimmed, when it is an IP address.
 * Entries are split at every `,`, so an empty entry counts, as in Envoy's getLastAddressFromXFF.
 */
function addressFromRight(xff: string, skip: number): string | undefined {
  if (xff === "") return undefined;
  const entries = xff.split(",");
  if (entries.length < skip + 1) return undefined;
  const entry = entries[entries.length - 1 - skip].replace(/^[ \t]+|[ \t]+$/g, "");
  return parseIp(entry) === undefined ? undefined : entry;
}

/**
 * The X-Forwarded-Proto a gateway forwards (Envoy with use_remote_address): the scheme of the
 * downstream connection, unless a trusted hop is in front (numTrustedProxies > 0) and the request
 * already carries one.
 *
 * @param received the received value (several fields joined with `,`), or undefined when absent
 * @param tls whether the downstream connection is TLS
 * @returns the value to forward in place of the received fields, or null to keep them
 */
export function gatewayForwardedProto(
  received: string | undefined,
  tls: boolean,
  numTrustedProxies: number,
): string | null {
  if (numTrustedProxies > 0 && received !== undefined) return null;
  return tls ? "https" : "http";
}

/**
 * Checks a numTrustedProxies value.
 *
 * @param at its field path in the message
 * @throws Error `<at>: <value> is not a whole number from 0 to 255`
 */
export function trustedHopsOf(value: unknown, at: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 255) {
    throw new Error(`${at}: ${JSON.stringify(value)} is not a whole number from 0 to 255`);
  }
  return value;
}

function isLoopback(ip: string): boolean {
  const bytes = parseIp(ip);
  if (bytes === undefined) return false;
  if (bytes.length === 4) return bytes[0] === 127;
  return bytes.every((b, i) => b === (i === 15 ? 1 : 0));
}
