/**
 * X-Forwarded-For on the wire: reads every X-Forwarded-For field of a request head and applies
 * shared's {@link forwardedFor} (Envoy's rules with Istio's settings). On a gateway the received
 * fields are marked dropped and one `x-forwarded-for: <received>,<peer>` line replaces them, and
 * X-Forwarded-Proto is set to the connection's scheme unless a trusted hop sent it
 * ({@link gatewayForwardedProto}); on a sidecar both are forwarded untouched.
 *
 * @module
 */
import { type ForwardedFor, forwardedFor, gatewayForwardedProto } from "../../shared/proxy_settings/mod.ts";
import type { HttpHead } from "../http/head.ts";

const XFF = "x-forwarded-for";
const XFP = "x-forwarded-proto";

/** The values of the fields named `name` (lower case), in order; with `drop`, each is marked dropped. */
function fieldValues(h: HttpHead, name: string, drop: boolean): string[] {
  const out: string[] = [];
  const f = h.fields;
  for (let i = 0; i < h.count; i++) {
    if (f[i * 4 + 1] - f[i * 4] !== name.length || h.name(i).toLowerCase() !== name) continue;
    out.push(h.value(i));
    if (drop) h.drop[i] = 1;
  }
  return out;
}

/** The addresses of a connection that the computation needs. */
export interface ConnectionAddresses {
  peerIp: string;
  localIp: string;
  /** Whether the downstream connection is TLS (X-Forwarded-Proto `https`). */
  tls?: boolean;
}

/**
 * A gateway's request (Envoy's use_remote_address): the received X-Forwarded-For fields (and
 * X-Forwarded-Proto ones that are replaced) are marked dropped.
 *
 * @returns the trusted client address, the new X-Forwarded-For value, and the header lines to add
 */
export function gatewayForwardedFor(
  h: HttpHead,
  conn: ConnectionAddresses,
  numTrustedProxies: number,
): ForwardedFor & { line: string } {
  const r = forwardedFor({
    values: fieldValues(h, XFF, true),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: true,
    numTrustedProxies,
  });
  const protos = fieldValues(h, XFP, false);
  const proto = gatewayForwardedProto(
    protos.length === 0 ? undefined : protos.join(","),
    conn.tls === true,
    numTrustedProxies,
  );
  if (proto !== null) fieldValues(h, XFP, true);
  return { ...r, line: `${XFF}: ${r.forwardedFor}\r\n${proto === null ? "" : `${XFP}: ${proto}\r\n`}` };
}

/** A sidecar's trusted client address: the last X-Forwarded-For entry when it is an address, else the peer. */
export function sidecarRemoteIp(h: HttpHead, conn: ConnectionAddresses): string {
  return forwardedFor({
    values: fieldValues(h, XFF, false),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: false,
    numTrustedProxies: 0,
  }).remoteIp;
}
