/**
 * The outbound listener: the application's HTTP/1.1 requests to services, sent to the proxy either
 * as a forward proxy (`http_proxy`, absolute-form targets) or redirected to it (origin form, routed
 * by Host). Per request: the authority is resolved to a service port ({@link resolveHost}), an
 * endpoint chosen round robin ({@link RoundRobin}), and the request forwarded over a pooled
 * connection to it, with mutual TLS and secure naming when the endpoint is proxied (automatic mTLS),
 * else plain text.
 *
 * The forwarding is ../http's {@link Http1Session}. Its {@link Upstream} has no view of the request,
 * so the downstream socket is a {@link SocketIo} subclass that reads each request head itself first
 * (while the session waits for a head), normalizes its target once with the mesh's
 * `pathNormalization` (./target.ts), resolves the route on that path, rewrites the head with it (an
 * absolute-form target in origin form, Host from its authority, RFC 9112 3.2.2), and hands the session
 * that head to parse: a gateway's policies then see the path that was routed and is forwarded.
 * The proxy's own answers (404 unknown host, 503 no endpoint, 502 upstream failure with the reason)
 * are served by the {@link Upstream} as a canned response on an in-memory connection, since the
 * session answers a failed connect only with its own 503.
 *
 * @module
 */
import net from "node:net";
import type tls from "node:tls";
import { listen } from "../http/listen.ts";
import { Duplex } from "node:stream";
import { ascii } from "../http/chars.ts";
import { DEFAULT_HEAD_LIMITS, type HeadLimits, HeadParser } from "../http/head.ts";
import { HttpError, type HttpHead, REQUEST } from "../http/http_head.ts";
import { Http1Session, type Log, type SessionObserver, type Upstream } from "../http/session.ts";
import {
  closeForLimit,
  ConnectionClock,
  ConnectionSlots,
  DEFAULT_LISTENER_LIMITS,
  KEEP,
  limitKindOf,
  type LimitObserver,
  type ListenerLimits,
  type SharedConnectionCounter,
  sweepIntervalMs,
  timeoutName,
} from "../http/conn_limits.ts";
import { SocketIo } from "../http/socket_io.ts";
import { SESSION_COUNTERS, SessionStats } from "../http/session_stats.ts";
import { type RuntimeSnapshot, settingsInForce } from "../runtime/snapshot.ts";
import { RoundRobin, WeightedRoundRobin } from "./balancer.ts";
import { selectRoute } from "../../shared/routing/mod.ts";
import { InboundPolicyFilter } from "../filters/mod.ts";
import { DialError, EndpointPool, mtlsDialer, plainDialer } from "./endpoint_pool.ts";
import { clientHelloSni, MAX_RECORD_BYTES } from "./client_hello.ts";
import { GatewayTls, type GatewayTlsContext, peerSans } from "./gateway_tls.ts";
import { certificateFields, certificateHash, formatXfccElement } from "../inbound/xfcc.ts";
import { type Resolution, resolveHost, resolveService } from "./resolve.ts";
import { type RoutedTarget, routedTarget } from "./target.ts";

/** Events of an outbound listener. Calls are synchronous and must be cheap. */
export interface OutboundObserver extends SessionObserver, LimitObserver {
  connectionOpened(): void;
  connectionClosed(): void;
  /** A new upstream connection, over mutual TLS or plain text. */
  upstreamConnection(mtls: boolean): void;
  /** A proxy answer instead of a forwarded response. */
  localReply(kind: LocalReplyKind): void;
  /** Gateway HTTPS listeners: a TLS handshake that completed, failed, or found no server for its SNI. */
  downstreamTls(outcome: "handshake" | "handshake_error" | "no_filter_chain_match"): void;
}

/** Why the proxy answered itself. */
export type LocalReplyKind =
  | "bad_request"
  | "bad_authority"
  | "no_route"
  | "no_healthy_upstream"
  | "no_certificate"
  | "connect_failure"
  | "tls_failure"
  | "identity_mismatch"
  | "timeout";

/** Counter names of {@link OutboundStats}: its own, then the session counters. */
export const OUTBOUND_COUNTERS = [
  "downstream_cx_total",
  "downstream_cx_active",
  "downstream_rq_local_reply",
  "upstream_cx_total",
  "upstream_cx_mtls_total",
  "upstream_cx_plaintext_total",
  "upstream_cx_connect_timeout",
  "ssl.connection_error",
  "ssl.fail_verify_san",
  "no_route",
  "upstream_cx_none_healthy",
  "ssl.handshake",
  "ssl.handshake_error",
  "no_filter_chain_match",
  ...SESSION_COUNTERS,
] as const;

const TLS_COUNTERS = {
  handshake: "ssl.handshake",
  handshake_error: "ssl.handshake_error",
  no_filter_chain_match: "no_filter_chain_match",
} as const;

/** Envoy-style counters of an outbound listener. */
export class OutboundStats extends SessionStats<(typeof OUTBOUND_COUNTERS)[number]>
  implements OutboundObserver {
  constructor() {
    super(OUTBOUND_COUNTERS);
  }

  connectionOpened(): void {
    this.counters.downstream_cx_total++;
    this.counters.downstream_cx_active++;
  }
  connectionClosed(): void {
    this.counters.downstream_cx_active--;
  }
  upstreamConnection(mtls: boolean): void {
    this.counters.upstream_cx_total++;
    if (mtls) this.counters.upstream_cx_mtls_total++;
    else this.counters.upstream_cx_plaintext_total++;
  }
  localReply(kind: LocalReplyKind): void {
    this.counters.downstream_rq_local_reply++;
    switch (kind) {
      case "no_route":
      case "bad_authority":
        this.counters.no_route++;
        break;
      case "no_healthy_upstream":
      case "no_certificate":
        this.counters.upstream_cx_none_healthy++;
        break;
      case "connect_failure":
        this.counters.upstream_cx_connect_fail++;
        break;
      case "timeout":
        this.counters.upstream_cx_connect_timeout++;
        break;
      case "tls_failure":
        this.counters["ssl.connection_error"]++;
        break;
      case "identity_mismatch":
        this.counters["ssl.fail_verify_san"]++;
        break;
    }
  }
  downstreamTls(outcome: "handshake" | "handshake_error" | "no_filter_chain_match"): void {
    this.counters[TLS_COUNTERS[outcome]]++;
  }
  snapshot(): Record<string, number> {
    return { ...this.counters };
  }
}

/** Settings of an {@link OutboundListener}. */
export interface OutboundListenerOptions {
  /** Address to listen on (127.0.0.1 for a sidecar's outbound port). */
  address: string;
  /** Port; 0 picks a free one (see {@link OutboundListener.port}). */
  port: number;
  /** Bind with SO_REUSEPORT, so that every worker thread binds the same port. */
  reusePort?: boolean;
  /** The current runtime snapshot; read for every request. */
  snapshot(): RuntimeSnapshot;
  log: Log;
  /** Counters; an {@link OutboundStats} by default (see {@link OutboundListener.observer}). */
  observer?: OutboundObserver;
  /** Head limits; Envoy's defaults (60 KiB, 100 fields). */
  limits?: Partial<HeadLimits>;
  /** Request-headers timeout, idle timeout, connection limit ({@link DEFAULT_LISTENER_LIMITS}). */
  connectionLimits?: Partial<ListenerLimits>;
  /** The listener's open-connection counter, shared by every worker's copy of it. */
  connectionCounter?: SharedConnectionCounter;
  /** Upstream pools, one per endpoint. */
  upstream?: { maxIdle?: number; idleTimeoutMs?: number; connectTimeoutMs?: number };
  /**
   * Gateway mode: requests are routed by the snapshot's route configurations of these names instead
   * of by their authority as a service: one `http.<port>` (plain text), or the
   * `https.<port>.<port name>.<gateway>.<namespace>` of one bind port, chosen per connection by SNI
   * and terminated with TLS ({@link GatewayTls}).
   */
  routeNames?: readonly string[];
}

/** What a gateway connection established before its first request. */
interface GatewayConnection {
  /** The route configuration its requests use. */
  routeName: string | undefined;
  /** MUTUAL: the client certificate's SPIFFE ID, for `source.principals`. */
  principal: string | undefined;
  sni: string | undefined;
  /** MUTUAL: the client certificate as an X-Forwarded-Client-Cert element (Istio's gateways set it). */
  xfcc: Uint8Array | null;
}

/** Where the current request of a connection goes. */
type Route =
  | { local: false; pool: EndpointPool; target: string }
  | { local: true; status: number; body: string; location?: string };

/** A request's route, and the head to forward instead of the received one (null: unchanged). */
interface Routed {
  route: Route;
  head: Uint8Array | null;
}

const NO_ROUTE: Route = { local: true, status: 404, body: "no request yet" };

/** The outbound listener. Call {@link start}, and {@link close} to stop it. */
export class OutboundListener {
  readonly observer: OutboundObserver;
  readonly #o: OutboundListenerOptions;
  readonly #log: Log;
  readonly #server: net.Server;
  readonly #limits: HeadLimits;
  readonly #connLimits: ListenerLimits;
  readonly #slots: ConnectionSlots;
  readonly #connectTimeoutMs: number;
  readonly #rr = new RoundRobin();
  readonly #weighted = new WeightedRoundRobin();
  readonly #pools = new Map<string, EndpointPool>();
  readonly #conns = new Set<RoutingDownstream>();
  /** Gateway HTTPS connections between accept and handshake. */
  readonly #handshaking = new Map<net.Socket, ConnectionClock>();
  readonly #gatewayTls: GatewayTls | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #port = 0;
  #closed = false;

  constructor(options: OutboundListenerOptions) {
    this.#o = options;
    this.#log = options.log;
    this.observer = options.observer ?? new OutboundStats();
    this.#limits = { ...DEFAULT_HEAD_LIMITS, ...options.limits };
    this.#connLimits = { ...DEFAULT_LISTENER_LIMITS, ...options.connectionLimits };
    this.#slots = new ConnectionSlots(this.#connLimits.maxConnections, options.connectionCounter);
    this.#connectTimeoutMs = options.upstream?.connectTimeoutMs ?? 10_000;
    if (options.routeNames?.some((n) => n.startsWith("https."))) {
      this.#gatewayTls = new GatewayTls({
        onSecure: (socket, ctx) => this.#guarded(socket, () => this.#onSecure(socket, ctx)),
        onError: (err, socket) => this.#guarded(socket, () => this.#onTlsError(err, socket)),
        onBuildError: (route, reason) => this.#log.error("gateway credential not loaded", { route, reason }),
      });
    }
    this.#server = net.createServer({ allowHalfOpen: true }, (raw) => {
      try {
        this.#onConnection(raw);
      } catch (e) {
        this.#log.error("outbound listener error", { error: String(e) });
        raw.destroy();
      }
    });
  }

  get port(): number {
    return this.#port;
  }

  get connectionCount(): number {
    return this.#conns.size;
  }

  /** Endpoint pools now (one per endpoint address, port and identity). */
  get poolCount(): number {
    return this.#pools.size;
  }

  async start(): Promise<void> {
    this.#port = await listen(
      this.#server,
      this.#o,
      (err: Error) => this.#log.error("outbound listener error", { error: err.message }),
    );
    const timer = setInterval(() => {
      try {
        this.#sweep();
      } catch (e) {
        this.#log.error("outbound sweep failed", { error: String(e) });
      }
    }, sweepIntervalMs(this.#connLimits));
    Deno.unrefTimer(timer);
    this.#timer = timer;
    this.#log.info("outbound listener started", { address: `${this.#o.address}:${this.#port}` });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const c of this.#conns) c.destroy();
    for (const raw of this.#handshaking.keys()) raw.destroy();
    for (const p of this.#pools.values()) p.close();
    this.#pools.clear();
    await closed;
  }

  #onConnection(raw: net.Socket): void {
    raw.on("error", () => {});
    if (!this.#slots.acquire()) {
      // Envoy's listener connection limit: closed at once, counted as downstream_cx_overflow.
      this.observer.limitHit("overflow");
      raw.destroy();
      return;
    }
    raw.once("close", () => this.#slots.release());
    raw.setNoDelay(true);
    this.observer.connectionOpened();
    const clock = new ConnectionClock(Date.now());
    if (this.#gatewayTls !== undefined) {
      this.#handshaking.set(raw, clock);
      raw.once("close", () => {
        if (this.#handshaking.delete(raw)) this.observer.connectionClosed();
      });
      this.#sniffClientHello(raw);
      return;
    }
    raw.once("close", () => this.observer.connectionClosed());
    this.#serveHttp(raw, raw, clock, {
      routeName: this.#o.routeNames?.[0],
      principal: undefined,
      sni: undefined,
      xfcc: null,
    });
  }

  /** Runs a TLS event handler so that nothing it throws ends the process. */
  #guarded(socket: net.Socket, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.#log.error("gateway TLS error", { error: String(e) });
      socket.destroy();
    }
  }

  /**
   * Reads the ClientHello (without consuming it) to pick the HTTPS server by SNI, then hands the
   * connection to that server's TLS. No server for the SNI: a TCP reset, as Envoy without a
   * matching filter chain closes the connection.
   */
  #sniffClientHello(raw: net.Socket): void {
    const peer = `${raw.remoteAddress}:${raw.remotePort}`;
    const chunks: Uint8Array[] = [];
    let size = 0;
    let sniffing = true;
    // Envoy's listener_filters_timeout.
    const timer = setTimeout(() => raw.destroy(), 15_000);
    Deno.unrefTimer(timer);
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      size += chunk.length;
      const all = concat(chunks, size);
      const hello = clientHelloSni(all);
      if (hello.status === "more" && size < MAX_RECORD_BYTES) return;
      raw.off("data", onData);
      sniffing = false;
      clearTimeout(timer);
      raw.pause();
      raw.unshift(all);
      if (hello.status !== "done") {
        this.observer.downstreamTls("no_filter_chain_match");
        this.#log.debug("gateway connection refused", {
          peer,
          reason: hello.status === "more" ? "ClientHello too large" : hello.reason,
        });
        raw.resetAndDestroy();
        return;
      }
      const picked = this.#gatewayTls!.select(this.#o.snapshot(), this.#o.routeNames ?? [], hello.sni);
      if (!picked.ok) {
        this.observer.downstreamTls("no_filter_chain_match");
        this.#log.warn("gateway TLS connection refused", { peer, reason: picked.reason });
        raw.resetAndDestroy();
        return;
      }
      picked.context.server.emit("connection", raw);
    };
    raw.on("data", onData);
    // Closed before a whole ClientHello (a port probe): with allowHalfOpen nothing else would close it.
    raw.once("end", () => {
      if (sniffing) raw.destroy();
    });
  }

  #onSecure(socket: tls.TLSSocket, ctx: GatewayTlsContext): void {
    socket.on("error", () => {});
    const raw = (socket as unknown as { _parent?: net.Socket })._parent;
    const clock = raw === undefined ? undefined : this.#handshaking.get(raw);
    if (raw === undefined || clock === undefined || !this.#handshaking.delete(raw) || this.#closed) {
      socket.destroy();
      raw?.destroy();
      return;
    }
    raw.once("close", () => this.observer.connectionClosed());
    const sniRaw = (socket as unknown as { servername?: string | false }).servername;
    const sni = typeof sniRaw === "string" && sniRaw !== "" ? sniRaw : undefined;
    const peer = `${raw.remoteAddress}:${raw.remotePort}`;
    let principal: string | undefined;
    let xfcc: Uint8Array | null = null;
    if (ctx.mutual) {
      const cert = socket.getPeerCertificate(true);
      if (!socket.authorized || cert?.raw === undefined) {
        this.observer.downstreamTls("handshake_error");
        this.#log.warn("gateway TLS handshake failed", {
          peer,
          reason: String(socket.authorizationError ?? "no client certificate"),
        });
        socket.destroy();
        return;
      }
      const sans = peerSans(cert.subjectaltname);
      if (ctx.subjectAltNames.length > 0 && !sans.all.some((s) => ctx.subjectAltNames.includes(s))) {
        this.observer.downstreamTls("handshake_error");
        this.#log.warn("gateway TLS connection refused", {
          peer,
          reason: `client certificate has none of the SANs ${ctx.subjectAltNames.join(", ")}`,
        });
        socket.destroy();
        return;
      }
      principal = sans.uris.find((u) => u.startsWith("spiffe://"));
      const der = new Uint8Array(cert.raw);
      const fields = certificateFields(der);
      xfcc = ascii(formatXfccElement({
        by: [],
        hash: certificateHash(der),
        subject: fields.subject,
        uris: fields.uris,
        dnsNames: fields.dnsNames,
      }));
    }
    this.observer.downstreamTls("handshake");
    this.#serveHttp(socket, raw, clock, { routeName: ctx.routeName, principal, sni, xfcc });
  }

  #onTlsError(err: Error, socket: tls.TLSSocket): void {
    const raw = (socket as unknown as { _parent?: net.Socket })._parent;
    this.observer.downstreamTls("handshake_error");
    this.#log.warn("gateway TLS handshake failed", {
      peer: raw ? `${raw.remoteAddress}:${raw.remotePort}` : "unknown",
      reason: String(
        (socket as unknown as { authorizationError?: unknown }).authorizationError ?? err.message,
      ),
    });
    socket.destroy();
    raw?.destroy();
  }

  /** Serves HTTP/1.1 on a connection (plain text, or the TLS socket over `raw`). */
  #serveHttp(socket: net.Socket, raw: net.Socket, clock: ConnectionClock, gateway: GatewayConnection): void {
    const peer = `${raw.remoteAddress}:${raw.remotePort}`;
    const upstream = new RouteUpstream((kind, reason, target) => {
      this.observer.localReply(kind);
      this.#log.warn("outbound upstream connection failed", { peer, target, kind, reason });
    });
    const down = new RoutingDownstream(socket, this.#limits, upstream, (h) => this.#route(h, peer, gateway));
    down.clock = clock;
    this.#conns.add(down);
    raw.once("close", () => this.#conns.delete(down));
    // A gateway enforces the RequestAuthentications and AuthorizationPolicies that select its workload
    // (policies seed: "applies to all services bound to that gateway"), as a sidecar does inbound.
    // The router normalized the target already: the filter's policies see the routed, forwarded path.
    const filter = this.#o.routeNames === undefined ? undefined : new InboundPolicyFilter(
      this.#o.snapshot,
      {
        principal: gateway.principal,
        peerIp: raw.remoteAddress ?? "",
        localIp: raw.localAddress ?? "",
        port: this.#port,
        sni: gateway.sni,
        peer,
        gateway: true,
        tls: socket !== raw,
      },
      this.#log,
      { targetNormalized: true },
    );
    const session = new Http1Session(down, {
      upstream: down.upstream,
      observer: this.observer,
      log: this.#log,
      peer,
      xfccElement: gateway.xfcc,
      filter,
      defaultHost: ascii("localhost"),
      limits: this.#limits,
    });
    down.session = session;
    session.run();
  }

  /**
   * The route of one request head, with its target normalized once with the mesh's option (never
   * throws: a failure becomes a local reply).
   */
  #route(h: HttpHead, peer: string, gateway: GatewayConnection): Routed {
    try {
      const snapshot = this.#o.snapshot();
      const target = routedTarget(h, settingsInForce(snapshot).pathNormalization);
      if (!target.ok) {
        return {
          route: this.#local("bad_request", 400, `invalid request target: ${target.reason}`, peer),
          head: null,
        };
      }
      return { route: this.#routeOf(target, snapshot, peer, gateway.routeName), head: target.head };
    } catch (e) {
      this.#log.error("outbound routing failed", { peer, error: String(e) });
      return {
        route: { local: true, status: 500, body: "internal error while routing the request" },
        head: null,
      };
    }
  }

  #routeOf(
    t: RoutedTarget & { ok: true },
    snapshot: RuntimeSnapshot,
    peer: string,
    routeName: string | undefined,
  ): Route {
    if (t.authority === null) {
      return this.#local(
        "bad_authority",
        400,
        "request has no Host header and no absolute-form target",
        peer,
      );
    }
    if (t.scheme !== "" && t.scheme !== "http") {
      return this.#local("bad_authority", 400, `unsupported scheme ${t.scheme}`, peer);
    }
    const namespace = snapshot.workload?.namespace;
    let r: Resolution;
    if (this.#o.routeNames !== undefined) {
      const picked = this.#gatewayDestination(snapshot, routeName, t.authority, t.path);
      if ("reason" in picked) return this.#local("no_route", 404, picked.reason, peer);
      if ("redirect" in picked) {
        // Envoy's require_tls: 301 to https, dropping an explicit :80.
        const host = t.authority.replace(/:80$/, "");
        return {
          local: true,
          status: 301,
          body: "",
          location: `https://${host}${t.path}${t.query}`,
        };
      }
      r = resolveService(picked, namespace, snapshot);
    } else {
      r = resolveHost(t.authority, namespace, snapshot);
    }
    if (!r.ok) return this.#local(r.status === 400 ? "bad_authority" : "no_route", r.status, r.reason, peer);
    const choice = this.#rr.pickEndpoint(r.key, r.service.endpoints, r.port.number);
    if (choice === undefined) {
      return this.#local(
        "no_healthy_upstream",
        503,
        `no healthy upstream: service ${r.key} has no endpoint for port ${r.port.number}`,
        peer,
      );
    }
    const { endpoint, port } = choice;
    const target = `${endpoint.address}:${port}`;
    const cert = snapshot.certificate;
    if (endpoint.proxied && cert === undefined) {
      return this.#local(
        "no_certificate",
        503,
        `no healthy upstream: ${target} of ${r.key} needs mutual TLS and the proxy has no workload certificate yet`,
        peer,
      );
    }
    const poolKey = endpoint.proxied ? `mtls|${target}|${endpoint.identity}` : `plain|${target}`;
    let pool = this.#pools.get(poolKey);
    if (pool === undefined) {
      const mtls = endpoint.proxied;
      // The dialer reads the current certificate per connection, so rotation reaches new connections.
      const dial = mtls
        ? () => {
          const c = this.#o.snapshot().certificate ?? cert!;
          return mtlsDialer(endpoint.address, port, c, endpoint.identity, this.#connectTimeoutMs)();
        }
        : plainDialer(endpoint.address, port, this.#connectTimeoutMs);
      pool = new EndpointPool({
        dial,
        maxIdle: this.#o.upstream?.maxIdle,
        idleTimeoutMs: this.#o.upstream?.idleTimeoutMs,
        onConnect: () => this.observer.upstreamConnection(mtls),
      });
      this.#pools.set(poolKey, pool);
    }
    return { local: false, pool, target: `${r.key} ${target}` };
  }

  /** The `host:port` a gateway route sends the request to, a redirect to https, or why there is none. */
  #gatewayDestination(
    snapshot: RuntimeSnapshot,
    routeName: string | undefined,
    authority: string,
    path: string,
  ): { host: string; port: number } | { reason: string } | { redirect: true } {
    const rc = routeName === undefined ? undefined : snapshot.routes[routeName];
    if (rc === undefined) return { reason: `no route configuration ${routeName}` };
    const s = selectRoute(rc, authority, path);
    if (!s.ok) return { reason: s.reason };
    if (s.virtualHost.httpsRedirect) return { redirect: true };
    return this.#weighted.pick(s.route.name, s.route.destinations);
  }

  #local(kind: LocalReplyKind, status: number, body: string, peer: string): Route {
    this.observer.localReply(kind);
    this.#log.debug("outbound local reply", { peer, status, reason: body });
    return { local: true, status, body };
  }

  #sweep(): void {
    const now = Date.now();
    const limits = this.#connLimits;
    for (const [raw, clock] of this.#handshaking) {
      const verdict = clock.check(now, null, null, limits);
      if (verdict === KEEP) continue;
      // No request head in time: the TLS handshake (or the ClientHello) has not even completed.
      this.observer.limitHit(limitKindOf(verdict));
      raw.destroy();
    }
    for (const c of this.#conns) {
      const session = c.session;
      if (c.closing || session === null) continue;
      const verdict = c.clock.check(now, c, session, limits);
      if (verdict === KEEP) continue;
      c.closing = true;
      this.#log.debug("connection closed: timeout", {
        timeout: timeoutName(verdict),
      });
      closeForLimit(verdict, c, session, this.observer);
    }
    for (const [key, pool] of this.#pools) {
      pool.sweep(now);
      if (pool.openCount === 0 && now - pool.lastUsed > 60_000) this.#pools.delete(key);
    }
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/**
 * The downstream connection: while the session waits for a request head, reads the head itself,
 * routes it and gives the session the (possibly rewritten) head; body bytes pass through.
 */
class RoutingDownstream extends SocketIo {
  session: Http1Session | null = null;
  closing = false;
  clock = new ConnectionClock(Date.now());
  readonly upstream: RouteUpstream;
  readonly #parser: HeadParser;
  readonly #route: (h: HttpHead) => Routed;
  #held: Uint8Array[] = [];

  constructor(raw: net.Socket, limits: HeadLimits, upstream: RouteUpstream, route: (h: HttpHead) => Routed) {
    super(raw);
    this.#parser = new HeadParser(REQUEST, limits);
    this.#route = route;
    this.upstream = upstream;
  }

  override read(): Uint8Array | null | undefined {
    const s = this.session;
    if (s === null || s.waitingSince === 0) return super.read();
    const p = this.#parser;
    for (;;) {
      const c = super.read();
      if (c === undefined) return undefined;
      if (c === null) {
        this.#held = [];
        p.reset();
        return null;
      }
      this.#held.push(c);
      let off: number;
      try {
        off = p.feed(c);
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        // The session's parser meets the same bytes and answers (400, 431, ...).
        return this.#release();
      }
      if (off < 0) continue;
      if (off < c.length) this.unread(c.subarray(off));
      const h = p.head;
      const routed = this.#route(h);
      this.upstream.route = routed.route;
      const head = routed.head ?? (h.shared ? h.buf.slice(h.start, h.end) : h.buf.subarray(h.start, h.end));
      this.#held = [];
      p.reset();
      return head;
    }
  }

  #release(): Uint8Array {
    const held = this.#held;
    this.#held = [];
    this.#parser.reset();
    return concat(held, held.reduce((n, c) => n + c.length, 0));
  }
}

/** The session's upstream for the current request of one connection. */
class RouteUpstream implements Upstream {
  route: Route = NO_ROUTE;
  readonly #owner = new WeakMap<SocketIo, EndpointPool>();
  readonly #onFailure: (kind: LocalReplyKind, reason: string, target: string) => void;

  constructor(onFailure: (kind: LocalReplyKind, reason: string, target: string) => void) {
    this.#onFailure = onFailure;
  }

  idle(): SocketIo | null {
    const r = this.route;
    if (r.local) return null;
    const io = r.pool.idle();
    if (io !== null) this.#owner.set(io, r.pool);
    return io;
  }

  async connect(): Promise<SocketIo> {
    const r = this.route;
    if (r.local) return cannedResponse(r.status, r.body, r.location);
    try {
      const io = await r.pool.connect();
      this.#owner.set(io, r.pool);
      return io;
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      const kind = e instanceof DialError ? e.kind : "connect_failure";
      this.#onFailure(kind, reason, r.target);
      return cannedResponse(kind === "timeout" ? 504 : 502, `upstream connect error (${kind}): ${reason}`);
    }
  }

  release(io: SocketIo, reusable: boolean): void {
    const pool = this.#owner.get(io);
    if (pool === undefined) {
      io.destroy();
      return;
    }
    this.#owner.delete(io);
    pool.release(io, reusable);
  }
}

const REASONS: Record<number, string> = {
  301: "Moved Permanently",
  400: "Bad Request",
  404: "Not Found",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** An in-memory connection that answers with one response and ignores what is written to it. */
function cannedResponse(status: number, body: string, location?: string): SocketIo {
  const bodyBytes = new TextEncoder().encode(body === "" ? "" : body + "\n");
  const head = `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\ncontent-length: ${bodyBytes.length}\r\n` +
    (location === undefined ? "" : `location: ${location}\r\n`) +
    "content-type: text/plain\r\nx-mesh-local-reply: true\r\n\r\n";
  const d = new Duplex({
    read() {},
    write(_chunk, _enc, cb) {
      cb();
    },
  });
  const io = new SocketIo(d as unknown as net.Socket);
  const msg = new Uint8Array(head.length + bodyBytes.length);
  msg.set(ascii(head), 0);
  msg.set(bodyBytes, head.length);
  d.push(msg);
  d.push(null);
  return io;
}
