/**
 * X-Forwarded-For on the wire: reads every X-Forwarded-For field of a request head and applies
 * shared's {@link forwardedFor} (Envoy's rules with Istio's settings). On a gateway the received
 * fields are marked dropped and one `x-forwarded-for: <received>,<peer>` line replaces them, and
 * X-Forwarded-Proto is set to the connection's scheme unless a trusted hop sent it
 * ({@link gatewayForwardedProto}); on a sidecar both are forwarded untouched.
 *
 * @module
 */
import {
  type ForwardedFor,
  forwardedFor,
  gatewayForwardedProto,
} from "../../shared/proxy_settings/forwarded_for.ts";
import type { HttpHead } from "../http/http_head.ts";

const XFF = "x-forwarded-for";
const XFP = "x-forwarded-proto";

/** The indexes of the fields named `name` (lower case), in order. */
function fieldsNamed(h: HttpHead, name: string): number[] {
  const out: number[] = [];
  const f = h.fields;
  for (let i = 0; i < h.count; i++) {
    if (f[i * 4 + 1] - f[i * 4] === name.length && h.name(i).toLowerCase() === name) out.push(i);
  }
  return out;
}

/** The values of the fields named `name` (lower case), in order. */
function fieldValues(h: HttpHead, name: string): string[] {
  return fieldsNamed(h, name).map((i) => h.value(i));
}

function drop(h: HttpHead, fields: number[]): void {
  for (const i of fields) h.drop[i] = 1;
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
  const xff = fieldsNamed(h, XFF);
  drop(h, xff);
  const r = forwardedFor({
    values: xff.map((i) => h.value(i)),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: true,
    numTrustedProxies,
  });
  const xfp = fieldsNamed(h, XFP);
  const proto = gatewayForwardedProto(
    xfp.length === 0 ? undefined : xfp.map((i) => h.value(i)).join(","),
    conn.tls === true,
    numTrustedProxies,
  );
  if (proto !== null) drop(h, xfp);
  return { ...r, line: `${XFF}: ${r.forwardedFor}\r\n${proto === null ? "" : `${XFP}: ${proto}\r\n`}` };
}

/** A sidecar's trusted client address: the last X-Forwarded-For entry when it is an address, else the peer. */
export function sidecarRemoteIp(h: HttpHead, conn: ConnectionAddresses): string {
  return forwardedFor({
    values: fieldValues(h, XFF),
    peerIp: conn.peerIp,
    localIp: conn.localIp,
    useRemoteAddress: false,
    numTrustedProxies: 0,
  }).remoteIp;
}
