/**
 * A gateway's policies for the requests of one connection, HTTP/1.1 and HTTP/2 alike: a gateway
 * enforces the RequestAuthentications and AuthorizationPolicies that select its workload (policies
 * seed: "applies to all services bound to that gateway"), as a sidecar does inbound. The router
 * normalized the target already (`targetNormalized`), so the policies see the routed, forwarded path.
 *
 * @module
 */
import type net from "node:net";
import { InboundPolicyFilter } from "../filters/mod.ts";
import type { Log } from "../http/session_types.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

/** What a gateway connection established before its first request. */
export interface GatewayConnection {
  /** The route configuration its requests use. */
  routeName: string | undefined;
  /** MUTUAL: the client certificate's SPIFFE ID, for `source.principals`. */
  principal: string | undefined;
  sni: string | undefined;
  /** MUTUAL: the client certificate as an X-Forwarded-Client-Cert element (Istio's gateways set it). */
  xfcc: Uint8Array | null;
}

/**
 * The filter of a gateway connection.
 *
 * @param port the listener's port (`destination.port`)
 * @param socket the socket requests are read from (a TLS socket over `raw` for an HTTPS server)
 * @param raw the accepted TCP socket
 */
export function gatewayFilter(
  snapshot: () => RuntimeSnapshot,
  log: Log,
  port: number,
  socket: net.Socket,
  raw: net.Socket,
  gateway: GatewayConnection,
): InboundPolicyFilter {
  return new InboundPolicyFilter(
    snapshot,
    {
      principal: gateway.principal,
      peerIp: raw.remoteAddress ?? "",
      localIp: raw.localAddress ?? "",
      port,
      sni: gateway.sni,
      peer: `${raw.remoteAddress}:${raw.remotePort}`,
      gateway: true,
      tls: socket !== raw,
    },
    log,
    { targetNormalized: true },
  );
}
