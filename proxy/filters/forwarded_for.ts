/**
 * X-Forwarded-For on the wire: reads every X-Forwarded-For field of a request head and applies
 * shared's {@link forwardedFor} (Envoy's rules with Istio's settings). On a gateway the received
 * fields are marked dropped and one `x-forwarded-for: <received>,<peer>` line replaces them; on a
 * sidecar they are forwarded untouched.
 *
 * @module
 */
import { type ForwardedFor, forwardedFor } from "../../shared/proxy_settings/mod.ts";
import type { HttpHead } from "../http/head.ts";

const XFF = "x-forwarded-for";

/** The X-Forwarded-For values of a head, in order; with `drop`, each such field is marked dropped. */
function forwardedForValues(h: HttpHead, drop: boolean): string[] {
  const out: string[] = [];
  const f = h.fields;
  for (let i = 0; i < h.count; i++) {
    if (f[i * 4 + 1] - f[i * 4] !== XFF.length || h.name(i).toLowerCase() !== XFF) continue;
    out.push(h.value(i));
    if (drop) h.drop[i] = 1;
  }
  return out;
}

/** The addresses of a connection that the computation needs. */
export interface ConnectionAddresses {
  peerIp: string;
  localIp: string;
}

/**
 * A gateway's request (Envoy's use_remote_address): the received fields are marked dropped.
 *
 * @returns the trusted client address, the new X-Forwarded-For value, and its header line
 */
export function gatewayForwardedFor(
  h: HttpHead,
  conn: ConnectionAddresses,
  numTrustedProxies: number,
): ForwardedFor & { line: string } {
  const r = forwardedFor({
    values: forwardedForValues(h, true),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: true,
    numTrustedProxies,
  });
  return { ...r, line: `${XFF}: ${r.forwardedFor}\r\n` };
}

/** A sidecar's trusted client address: the last X-Forwarded-For entry when it is an address, else the peer. */
export function sidecarRemoteIp(h: HttpHead, conn: ConnectionAddresses): string {
  return forwardedFor({
    values: forwardedForValues(h, false),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: false,
    numTrustedProxies: 0,
  }).remoteIp;
}
