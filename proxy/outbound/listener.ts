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
 * This file accepts connections (plain text, or a gateway's TLS by SNI) and enforces the connection
 * limits; routing and the endpoint pools are ./router.ts, the session's downstream and upstream
 * ./downstream.ts, the counters ./outbound_stats.ts.
 *
 * @module
 */
import net from "node:net";
import type tls from "node:tls";
import { AcceptedSockets, listen } from "../http/listen.ts";
import { ascii } from "../http/chars.ts";
import { DEFAULT_HEAD_LIMITS, type HeadLimits } from "../http/head.ts";
import { Http1Session } from "../http/session.ts";
import { type IstioMetrics, MeteredObserver } from "../http/istio_metrics.ts";
import type { Log } from "../http/session_types.ts";
import {
  closeForLimit,
  ConnectionClock,
  ConnectionSlots,
  DEFAULT_LISTENER_LIMITS,
  KEEP,
  limitKindOf,
  type ListenerLimits,
  type SharedConnectionCounter,
  sweepIntervalMs,
  timeoutName,
} from "../http/conn_limits.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { InboundPolicyFilter } from "../filters/mod.ts";
import { type GatewayConnection, gatewayFilter } from "./gateway_filter.ts";
import { readClientHello } from "../tls/client_hello.ts";
import { TlsPassthrough } from "./tls_passthrough.ts";
import { GatewayTls, type GatewayTlsContext } from "./gateway_tls.ts";
import { gatewayClient } from "./gateway_client.ts";
import { OutboundRouter, type RouterOptions } from "./router.ts";
import { RouteUpstream, RoutingDownstream } from "./downstream.ts";
import { type OutboundObserver, OutboundStats } from "./outbound_stats.ts";
import type { OutboundHttp2 } from "./http2.ts";
import { LazyCodec } from "../http/lazy_codec.ts";
import { sniffPreface } from "../h2proxy/preface.ts";
import { pauseReading, resumeReading } from "../tcp/relay.ts";
import { OutboundTcp, type OutboundTcpOptions } from "./tcp_forward.ts";
import { openLibc } from "../capture/libc.ts";
import { listenIpv6Loopback } from "./loopback6.ts";

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
  /** Istio's standard request metrics (the worker's); none counted when absent. */
  requestMetrics?: IstioMetrics;
  /** Head limits; Envoy's defaults (60 KiB, 100 fields). */
  limits?: Partial<HeadLimits>;
  /** Request-headers timeout, idle timeout, connection limit ({@link DEFAULT_LISTENER_LIMITS}). */
  connectionLimits?: Partial<ListenerLimits>;
  /** The listener's open-connection counter, shared by every worker's copy of it. */
  connectionCounter?: SharedConnectionCounter;
  /** Upstream pools, one per endpoint. */
  upstream?: RouterOptions["upstream"];
  /**
   * Gateway mode: requests are routed by the snapshot's route configurations of these names instead
   * of by their authority as a service: one `http.<port>` (plain text), or the
   * `https.<port>.<port name>.<gateway>.<namespace>` of one bind port, chosen per connection by SNI
   * and terminated with TLS ({@link GatewayTls}).
   */
  routeNames?: readonly string[];
  /**
   * Sidecar mode (no `routeNames`): connections are served by their original destination
   * (./tcp_forward.ts, ./dispatch.ts): TCP proxying, passthrough and auto-detection settings.
   */
  tcp?: Omit<OutboundTcpOptions, "snapshot" | "log" | "observer" | "listenerPort">;
}

/** The outbound listener. Call {@link start}, and {@link close} to stop it. */
export class OutboundListener {
  readonly observer: OutboundObserver;
  readonly #o: OutboundListenerOptions;
  readonly #log: Log;
  readonly #server: net.Server;
  /** Sidecar mode on 127.0.0.1: the [::1] twin that IPv6 REDIRECTs reach (./loopback6.ts). */
  #server6: net.Server | undefined;
  readonly #limits: HeadLimits;
  readonly #connLimits: ListenerLimits;
  readonly #slots: ConnectionSlots;
  readonly #router: OutboundRouter;
  /** Loaded with the first HTTP/2 connection (../http/lazy_codec.ts). */
  readonly #h2: LazyCodec<OutboundHttp2>;
  readonly #conns = new Set<RoutingDownstream>();
  readonly #accepted = new AcceptedSockets();
  /** Gateway HTTPS connections between accept and handshake. */
  readonly #handshaking = new Map<net.Socket, ConnectionClock>();
  readonly #gatewayTls: GatewayTls | undefined;
  readonly #passthrough: TlsPassthrough;
  /** Sidecar mode: serves connections by their original destination. */
  readonly #tcp: OutboundTcp | undefined;
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
    this.#router = new OutboundRouter(options, this.observer);
    this.#h2 = new LazyCodec(async () =>
      new (await import("./http2.ts")).OutboundHttp2({
        router: this.#router,
        snapshot: options.snapshot,
        log: options.log,
        observer: this.observer,
        connectTimeoutMs: options.upstream?.connectTimeoutMs,
        idleTimeoutMs: options.upstream?.idleTimeoutMs,
        downstreamIdleTimeoutMs: this.#connLimits.idleTimeoutMs,
        onIdleClose: () => this.observer.limitHit("idle_timeout"),
        requestTimeoutMs: this.#connLimits.requestTimeoutMs,
        onRequestTimeout: () => this.observer.limitHit("request_timeout"),
      })
    );
    this.#passthrough = new TlsPassthrough({
      ...options,
      observer: this.observer,
      connectTimeoutMs: options.upstream?.connectTimeoutMs,
    });
    if (options.routeNames?.some((n) => n.startsWith("https.") || n.startsWith("tls."))) {
      this.#gatewayTls = new GatewayTls({
        onSecure: (socket, ctx) => this.#guarded(socket, () => this.#onSecure(socket, ctx)),
        onError: (err, socket) => this.#guarded(socket, () => this.#onTlsError(err, socket)),
        onBuildError: (route, reason) => this.#log.error("gateway credential not loaded", { route, reason }),
      });
    }
    this.#tcp = options.routeNames !== undefined ? undefined : new OutboundTcp({
      ...options.tcp,
      handlers: {
        ...options.tcp?.handlers,
        tlsPassthrough: (socket, target) => this.#passthrough.service(socket, target),
        tlsBySni: (socket, destination, fallback) => this.#passthrough.bySni(socket, destination, fallback),
      },
      snapshot: options.snapshot,
      log: options.log,
      observer: this.observer,
      connectTimeoutMs: options.tcp?.connectTimeoutMs ?? options.upstream?.connectTimeoutMs,
      listenerPort: () => this.#port,
    });
    this.#server = net.createServer({ allowHalfOpen: true }, this.#accept);
  }

  readonly #accept = (raw: net.Socket): void => {
    try {
      this.#onConnection(raw);
    } catch (e) {
      this.#log.error("outbound listener error", { error: String(e) });
      raw.destroy();
    }
  };

  get port(): number {
    return this.#port;
  }

  get connectionCount(): number {
    return this.#conns.size;
  }

  /** Endpoint pools now (one per endpoint address, port and identity). */
  get poolCount(): number {
    return this.#router.poolCount;
  }

  async start(): Promise<void> {
    this.#port = await listen(
      this.#server,
      this.#o,
      (err: Error) => this.#log.error("outbound listener error", { error: err.message }),
    );
    if (this.#tcp !== undefined && this.#o.address === "127.0.0.1") {
      this.#server6 = await listenIpv6Loopback(this.#port, this.#o, this.#accept, this.#log);
    }
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
    const libc = this.#tcp === undefined ? undefined : openLibc();
    if (libc?.ok === false) {
      this.#log.warn(
        "transparent capture off: HTTP is routed by Host, other captured connections are closed",
        {
          reason: libc.reason,
        },
      );
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const closed = Promise.all(
      [this.#server, this.#server6].map((s) => s && new Promise<void>((resolve) => s.close(() => resolve()))),
    );
    for (const c of this.#conns) c.destroy();
    const released = this.#accepted.closeAll();
    const pools = this.#router.close();
    this.#h2.close();
    this.#passthrough.close();
    this.#tcp?.close();
    await Promise.all([closed, released, pools]);
  }

  #onConnection(raw: net.Socket): void {
    raw.on("error", () => {});
    this.#accepted.add(raw);
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
    // Sidecar mode: by the original destination (HTTP/1.1 and h2c through #serveSniffed, TCP, passthrough).
    const serveHttp = () => this.#serveSniffed(raw, clock);
    if (this.#tcp !== undefined) this.#tcp.accept(raw, serveHttp);
    else serveHttp();
  }

  /**
   * Serves a plain-text connection: HTTP/2 when it starts with the preface (h2c with prior knowledge,
   * RFC 9113 3.3), else HTTP/1.1 (decided on the first byte). The entry point of every plain-text HTTP
   * connection of the listener, sniffed or dispatched to HTTP/2 by its port's protocol.
   */
  #serveSniffed(raw: net.Socket, clock: ConnectionClock): void {
    const gateway: GatewayConnection = {
      routeName: this.#o.routeNames?.[0],
      principal: undefined,
      sni: undefined,
      xfcc: null,
    };
    sniffPreface(raw, this.#connLimits.requestHeadersTimeoutMs || 10_000, (h2) =>
      this.#guarded(raw, () => {
        if (!h2) return this.#serveHttp(raw, raw, clock, gateway);
        this.#serveH2(raw, `${raw.remoteAddress}:${raw.remotePort}`, gateway.routeName, raw, gateway, null);
      }));
  }

  /**
   * Hands an HTTP/2 connection to ./http2.ts with the filter chain and XFCC of the HTTP/1.1 path, per
   * stream. The first one waits for the codec's import with its bytes held in the socket.
   */
  #serveH2(
    socket: net.Socket,
    peer: string,
    routeName: string | undefined,
    raw: net.Socket,
    gateway: GatewayConnection,
    xfcc: Uint8Array | null,
  ): void {
    if (this.#h2.loaded === undefined) pauseReading(socket);
    this.#h2.use(
      (codec) =>
        this.#guarded(socket, () => {
          if (socket.destroyed) return;
          codec.serve(socket, peer, routeName, this.#filter(socket, raw, gateway), xfcc);
          resumeReading(socket);
        }),
      (e) => {
        this.#log.error("HTTP/2 codec not loaded", { peer, error: String(e) });
        socket.destroy();
      },
    );
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
   * connection to that server's TLS, or passes it through (PASSTHROUGH). No server for the SNI: a
   * TCP reset, as Envoy without a matching filter chain closes the connection.
   */
  #sniffClientHello(raw: net.Socket): void {
    const peer = `${raw.remoteAddress}:${raw.remotePort}`;
    readClientHello(raw).then((hello) =>
      this.#guarded(raw, () => {
        if (hello.status === "closed") return;
        if (hello.status === "timeout") {
          raw.destroy();
          return;
        }
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
        if ("passthrough" in picked) {
          if (this.#sniffed(raw)) this.#passthrough.gateway(raw, picked.passthrough, hello.sni, this.#port);
          return;
        }
        picked.context.server.emit("connection", raw);
      })
    );
  }

  /** Ends a connection's first-bytes phase; false when it was closed meanwhile. */
  #sniffed(raw: net.Socket): boolean {
    if (!this.#handshaking.delete(raw) || this.#closed) {
      raw.destroy();
      return false;
    }
    raw.once("close", () => this.observer.connectionClosed());
    return true;
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
      const client = gatewayClient(socket, ctx.subjectAltNames);
      if ("reason" in client) {
        this.observer.downstreamTls("handshake_error");
        this.#log.warn(client.message, { peer, reason: client.reason });
        socket.destroy();
        return;
      }
      ({ principal, xfcc } = client);
    }
    this.observer.downstreamTls("handshake");
    const gateway = { routeName: ctx.routeName, principal, sni, xfcc };
    if (socket.alpnProtocol === "h2") return this.#serveH2(socket, peer, ctx.routeName, raw, gateway, xfcc);
    this.#serveHttp(socket, raw, clock, gateway);
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
    const local = this.#router.localLabels();
    const metered = local === undefined ? undefined : new MeteredObserver(this.observer, local);
    const down = new RoutingDownstream(
      socket,
      upstream,
      (h) => {
        const routed = this.#router.route(h, peer, gateway.routeName);
        if (metered !== undefined) {
          metered.labels = (!routed.route.local && routed.route.labels) || this.#router.localLabels()!;
        }
        return routed;
      },
    );
    down.clock = clock;
    this.#conns.add(down);
    raw.once("close", () => this.#conns.delete(down));
    const filter = this.#filter(socket, raw, gateway);
    const session = new Http1Session(down, {
      upstream: down.upstream,
      observer: metered ?? this.observer,
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

  /** A gateway's policies for a connection's requests (./gateway_filter.ts); none for a sidecar. */
  #filter(socket: net.Socket, raw: net.Socket, gateway: GatewayConnection): InboundPolicyFilter | undefined {
    if (this.#o.routeNames === undefined) return undefined;
    return gatewayFilter(this.#o.snapshot, this.#log, this.#port, socket, raw, gateway);
  }

  #sweep(): void {
    const now = Date.now();
    const limits = this.#connLimits;
    for (const [raw, clock] of this.#handshaking) {
      const verdict = clock.check(now, null, null, limits);
      if (verdict === KEEP) continue;
      // No request head in time: the first bytes (a ClientHello, or the TLS handshake) are not even in.
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
    this.#router.sweep(now);
    this.#h2.sweep(now);
  }
}
