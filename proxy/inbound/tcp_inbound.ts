/**
 * Inbound TCP: a connection the dispatch (./dispatch.ts) carries as opaque bytes. The L4 rules of
 * the workload's AuthorizationPolicies decide first, with Istio's semantics (shared
 * `CompiledAuthorization.evaluateConnection`: principals, namespaces, ipBlocks, remoteIpBlocks,
 * ports; an ALLOW rule with HTTP-only fields matches nothing, a DENY rule's HTTP-only fields are
 * ignored), compiled once per snapshot with the HTTP path's policies (../filters/policies.ts). A
 * policy set that failed to compile denies everything (fail closed), as on the HTTP path.
 *
 * A denied connection is closed at once, before the application is connected: the client sees the
 * close and never an application byte, and the denial is logged (warning, logger `inbound`) with
 * the deciding policy and rule, as the HTTP path logs a 403. Envoy's RBAC network filter (default
 * `ONE_TIME_ON_FIRST_BYTE`) decides on the first byte while tcp_proxy has already connected
 * upstream; deciding before connecting is stricter (a server-first application never greets a
 * denied client) and sees the same attributes, all known once the handshake is done.
 *
 * An allowed connection is relayed to the application (`--inbound port=host:appPort`) with
 * ../tcp/relay.ts: byte for byte, half-close both ways, resets passed on, Envoy's 1 h idle timeout.
 * The connect timeout is Istio's 10 s; a failed connect closes the client (counted as
 * `upstream_cx_connect_fail`, logged).
 *
 * @module
 */
import net from "node:net";
import type { AuthorizationConnection, AuthorizationDecision } from "../../shared/mod.ts";
import type { Log } from "../http/session_types.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { inboundPoliciesOf } from "../filters/policies.ts";
import { DEFAULT_TCP_IDLE_TIMEOUT_MS, relay, type RelayResult } from "../tcp/relay.ts";
import type { TcpLabelSet } from "../tcp/tcp_metrics.ts";
import type { PeerIdentity } from "./front.ts";
import type { InboundObserver } from "./observer.ts";

/** Settings of {@link InboundTcp}. */
export interface InboundTcpOptions {
  appAddress: string;
  appPort: number;
  /** The container port: `ports` and `destination.port` of the policies. */
  port: number;
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: InboundObserver;
  /** The Istio TCP metrics of a connection from `principal` (null: plain text); none counted when absent. */
  metricsFor?(snapshot: RuntimeSnapshot, principal: string | null): TcpLabelSet;
  /** Relay idle timeout (ms). Default 1 h (Envoy tcp_proxy). */
  idleTimeoutMs?: number;
  /** Time to connect to the application (ms). Default 10 s (Istio's connect_timeout). */
  connectTimeoutMs?: number;
}

/** One inbound TCP connection to serve. */
export interface InboundTcpConnection {
  /** The socket to relay (a TLSSocket over mutual TLS), paused or held, unread bytes put back. */
  socket: net.Socket;
  /** The accepted TCP socket (addresses; closed with `socket`). */
  raw: net.Socket;
  /** What mutual TLS established; null for plain text. */
  peer: PeerIdentity | null;
  /** `ip:port` of the client, for logs. */
  peerText: string;
  /** Bytes read before the client's FIN that could not be put back (see dispatch), else null. */
  unread: Uint8Array | null;
}

/**
 * The L4 decision for one connection: the compiled policies of `snapshot`, fail closed when they
 * did not compile; allowed when the workload has no AuthorizationPolicy.
 */
export function authorizeInboundConnection(
  snapshot: RuntimeSnapshot,
  connection: AuthorizationConnection,
): AuthorizationDecision {
  const policies = inboundPoliciesOf(snapshot);
  if (policies.error !== null) return { allowed: false, reason: policies.error };
  if (policies.authz === null) return { allowed: true, reason: "allowed: no policy applies" };
  return policies.authz.evaluateConnection(connection);
}

/** The TCP path of one inbound listener. */
export class InboundTcp {
  readonly #o: InboundTcpOptions;
  readonly #open = new Set<AbortController>();

  constructor(options: InboundTcpOptions) {
    this.#o = options;
  }

  /** Relays in progress. */
  get relays(): number {
    return this.#open.size;
  }

  /** Authorizes `c` and relays it to the application, or closes it. */
  serve(c: InboundTcpConnection): void {
    const o = this.#o;
    const snapshot = o.snapshot();
    o.observer.tcpConnection();
    const principal = c.peer?.principal;
    const d = authorizeInboundConnection(snapshot, {
      port: o.port,
      sourcePrincipal: principal,
      sourceIp: c.raw.remoteAddress,
      destinationIp: c.raw.localAddress,
      sni: c.peer?.sni,
    });
    if (d.audit) {
      o.log.info("connection audited", {
        policy: `${d.audit.policy.namespace}/${d.audit.policy.name}`,
        rule: d.audit.ruleIndex,
        peer: c.peerText,
        port: o.port,
      });
    }
    o.observer.tcpAuthorized(d.allowed);
    if (!d.allowed) {
      o.log.warn("connection denied", {
        policy: d.policy ? `${d.policy.namespace}/${d.policy.name}` : "",
        rule: d.ruleIndex ?? -1,
        reason: d.reason,
        peer: c.peerText,
        principal: principal ?? "",
        port: o.port,
      });
      c.socket.destroy();
      c.raw.destroy();
      return;
    }
    this.#connect(c, snapshot);
  }

  /** Ends every relay (the listener closing). */
  close(): void {
    for (const a of this.#open) a.abort();
  }

  #connect(c: InboundTcpConnection, snapshot: RuntimeSnapshot): void {
    const o = this.#o;
    const up = net.connect({ host: o.appAddress, port: o.appPort, allowHalfOpen: true });
    up.setNoDelay(true);
    const fail = (reason: string): void => {
      o.observer.upstreamError("connect_failure");
      o.log.warn("cannot connect to the application", {
        app: `${o.appAddress}:${o.appPort}`,
        peer: c.peerText,
        reason,
      });
      up.destroy();
      c.socket.destroy();
      c.raw.destroy();
    };
    const timer = setTimeout(() => fail("connect timeout"), o.connectTimeoutMs ?? 10_000);
    const onError = (err: Error): void => {
      clearTimeout(timer);
      fail(err.message);
    };
    up.once("error", onError);
    // The client gave up while the application was being connected.
    const onClientClose = (): void => {
      clearTimeout(timer);
      up.off("error", onError);
      up.on("error", () => {});
      up.destroy();
    };
    c.raw.once("close", onClientClose);
    up.once("connect", () => {
      clearTimeout(timer);
      up.off("error", onError);
      c.raw.off("close", onClientClose);
      o.observer.upstreamConnection();
      this.#relay(c, up, snapshot);
    });
  }

  #relay(c: InboundTcpConnection, up: net.Socket, snapshot: RuntimeSnapshot): void {
    const o = this.#o;
    const metrics = o.metricsFor?.(snapshot, c.peer?.principal ?? null);
    metrics?.opened();
    if (c.unread !== null && c.unread.length > 0) {
      up.write(c.unread);
      metrics?.received(c.unread.length);
      o.observer.tcpBytes("downstream_to_upstream", c.unread.length);
    }
    const abort = new AbortController();
    this.#open.add(abort);
    relay(c.socket, up, {
      idleTimeoutMs: o.idleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS,
      signal: abort.signal,
      onBytes(direction, n) {
        o.observer.tcpBytes(direction, n);
        if (metrics === undefined) return;
        if (direction === "downstream_to_upstream") metrics.received(n);
        else metrics.sent(n);
      },
    }).then((r: RelayResult) => {
      this.#open.delete(abort);
      metrics?.closed();
      o.observer.tcpRelayed(r);
      if (!c.raw.destroyed) c.raw.destroy();
      o.log.debug("TCP connection closed", {
        peer: c.peerText,
        end: r.end,
        by: r.by,
        received: r.bytesFromDownstream,
        sent: r.bytesFromUpstream,
        ...(r.error === undefined ? {} : { error: r.error }),
      });
    });
  }
}
