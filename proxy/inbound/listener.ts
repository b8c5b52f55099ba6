/**
 * The inbound listener of one container port: accepts connections on the workload address, applies
 * the port's effective PeerAuthentication mode (./front.ts: STRICT resets plain text, PERMISSIVE takes
 * both on one port, DISABLE plain text only), then carries each connection as the port's protocol
 * says (./dispatch.ts): HTTP/1.1 to the application, HTTP/2 and gRPC (./http2.ts: ALPN `h2`, or the
 * preface), TCP relayed under the L4 rules (./tcp_inbound.ts), or first-bytes detection for a port
 * no service names.
 *
 * Every HTTP request passes the filter chain of ../filters (path normalization with the mesh's option, JWT
 * authentication, authorization) with the connection's attributes: the peer's SPIFFE ID (mutual
 * TLS), the peer and local addresses, the container port and the SNI; over mutual TLS it carries
 * X-Forwarded-Client-Cert (see ./xfcc.ts).
 *
 * @module
 */
import net from "node:net";
import { AcceptedSockets, listen } from "../http/listen.ts";
import type tls from "node:tls";
import { ascii, latin1 } from "../http/chars.ts";
import { DEFAULT_HEAD_LIMITS, type HeadLimits } from "../http/head.ts";
import {
  closeForLimit,
  ConnectionSlots,
  DEFAULT_LISTENER_LIMITS,
  KEEP,
  limitKindOf,
  type ListenerLimits,
  type SharedConnectionCounter,
  sweepIntervalMs,
  timeoutName,
} from "../http/conn_limits.ts";
import { Http1Session } from "../http/session.ts";
import type { Log } from "../http/session_types.ts";
import { NodeSocketIo } from "../http/socket_io.ts";
import { inboundModeOf, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundPolicyFilter } from "../filters/mod.ts";
import { type InboundObserver, InboundStats } from "./observer.ts";
import { type IstioMetrics, MeteredObserver } from "../http/istio_metrics.ts";
import { inboundIstioLabels } from "../http/istio_labels.ts";
import { UpstreamPool } from "./upstream_pool.ts";
import { Conn, HANDSHAKE, PeerAuthFront, type PeerIdentity, RELAYING, SERVING, SNIFF } from "./front.ts";
import {
  detectedCarriage,
  detectFirstBytes,
  type InboundCarriage,
  type InboundHttp2Handler,
  portRouteOf,
} from "./dispatch.ts";
import { InboundTcp } from "./tcp_inbound.ts";
import type { IstioTcpMetrics } from "../tcp/tcp_metrics.ts";
import { pauseReading, resumeReading } from "../tcp/relay.ts";
import type { InboundHttp2 } from "./http2.ts";
import { LazyCodec } from "../http/lazy_codec.ts";
import { prefaceState, sniffPreface } from "../h2proxy/preface.ts";
import { concat } from "../tls/client_hello.ts";

/** Settings of an {@link InboundListener}. */
export interface InboundListenerOptions {
  /** Address to listen on (the workload address). */
  address: string;
  /** Port to listen on; 0 picks a free one (see {@link InboundListener.port}). */
  port: number;
  /**
   * Bind with SO_REUSEPORT, so that each worker thread binds the same port and the kernel spreads
   * connections over them (Deno's node:net honours `reusePort`).
   */
  reusePort?: boolean;
  /** The application's endpoint. */
  appAddress: string;
  appPort: number;
  /** The current runtime snapshot; called for every new connection. */
  snapshot(): RuntimeSnapshot;
  log: Log;
  /** Counters; an {@link InboundStats} by default (see {@link InboundListener.observer}). */
  observer?: InboundObserver;
  /** Istio's standard request metrics (the worker's); none counted when absent. */
  requestMetrics?: IstioMetrics;
  /** The container port whose mutual TLS mode applies (portLevelMtls). Default `appPort`. */
  mtlsPort?: number;
  /** Head limits; Envoy's defaults (60 KiB, 100 fields). */
  limits?: Partial<HeadLimits>;
  /** Request-headers timeout, idle timeout, connection limit ({@link DEFAULT_LISTENER_LIMITS}). */
  connectionLimits?: Partial<ListenerLimits>;
  /** The listener's open-connection counter, shared by every worker's copy of it. */
  connectionCounter?: SharedConnectionCounter;
  /** Time for the first byte and the TLS handshake. Default 10 s (and at most the headers timeout). */
  handshakeTimeoutMs?: number;
  /** Upstream pool settings (HTTP; the connect timeout applies to TCP too). */
  upstream?: { maxIdle?: number; idleTimeoutMs?: number; connectTimeoutMs?: number };
  /** Istio's standard TCP metrics (the worker's); none counted when absent. */
  tcpMetrics?: IstioTcpMetrics;
  /** TCP idle timeout (ms). Default 1 h (Envoy tcp_proxy). */
  tcpIdleTimeoutMs?: number;
  /** Replaces the listener's own HTTP/2 path (./http2.ts) for HTTP/2 and gRPC connections (./dispatch.ts). */
  http2?: InboundHttp2Handler;
}

const ignore = () => {};

/** The listener of one container port. Call {@link start}, and {@link close} to stop it. */
export class InboundListener {
  /** Where the listener reports; the {@link InboundStats} made by default, or the one passed in. */
  readonly observer: InboundObserver;
  readonly #o: InboundListenerOptions;
  readonly #log: Log;
  readonly #server: net.Server;
  readonly #pool: UpstreamPool;
  readonly #front: PeerAuthFront;
  readonly #tcp: InboundTcp;
  /** Loaded with the first HTTP/2 connection (../http/lazy_codec.ts). */
  readonly #h2: LazyCodec<InboundHttp2>;
  readonly #conns = new Set<Conn>();
  readonly #accepted = new AcceptedSockets();
  readonly #byRaw = new WeakMap<net.Socket, Conn>();
  readonly #limits: HeadLimits;
  readonly #defaultHost: Uint8Array;
  readonly #mtlsPort: number;
  readonly #connLimits: ListenerLimits;
  readonly #slots: ConnectionSlots;
  readonly #handshakeTimeoutMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #port = 0;
  #closed = false;

  constructor(options: InboundListenerOptions) {
    this.#o = options;
    this.#log = options.log;
    this.observer = options.observer ?? new InboundStats();
    this.#limits = { ...DEFAULT_HEAD_LIMITS, ...options.limits };
    this.#defaultHost = ascii(`${options.appAddress}:${options.appPort}`);
    this.#mtlsPort = options.mtlsPort ?? options.appPort;
    this.#connLimits = { ...DEFAULT_LISTENER_LIMITS, ...options.connectionLimits };
    this.#slots = new ConnectionSlots(this.#connLimits.maxConnections, options.connectionCounter);
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000;
    const observer = this.observer;
    this.#pool = new UpstreamPool({
      host: options.appAddress,
      port: options.appPort,
      ...options.upstream,
      onConnect: () => observer.upstreamConnection(),
    });
    this.#front = new PeerAuthFront({
      mtlsPort: this.#mtlsPort,
      snapshot: options.snapshot,
      log: this.#log,
      observer,
      connOf: (socket) => this.#connOf(socket),
      guard: (conn, what, fn, socket) => this.#guard(conn, what, fn, socket),
      closed: () => this.#closed,
      serve: (conn, socket, peer) => this.#dispatch(conn, socket, peer),
      alpnH2: () => portRouteOf(options.snapshot(), this.#mtlsPort) === "http2",
      tlsPassthrough: () => {
        const route = portRouteOf(options.snapshot(), this.#mtlsPort);
        return route === "tcp" || route === "detect";
      },
    });
    this.#h2 = new LazyCodec(async () =>
      new (await import("./http2.ts")).InboundHttp2({
        requestMetrics: options.requestMetrics,
        appAddress: options.appAddress,
        appPort: options.appPort,
        snapshot: options.snapshot,
        log: options.log,
        observer,
        connectTimeoutMs: options.upstream?.connectTimeoutMs,
        idleTimeoutMs: options.upstream?.idleTimeoutMs,
        downstreamIdleTimeoutMs: this.#connLimits.idleTimeoutMs,
        onIdleClose: () => this.observer.limitHit("idle_timeout"),
        requestTimeoutMs: this.#connLimits.requestTimeoutMs,
        onRequestTimeout: () => this.observer.limitHit("request_timeout"),
      })
    );
    const metrics = options.tcpMetrics;
    this.#tcp = new InboundTcp({
      appAddress: options.appAddress,
      appPort: options.appPort,
      port: this.#mtlsPort,
      snapshot: options.snapshot,
      log: this.#log,
      observer,
      metricsFor: metrics &&
        ((snapshot, principal) => metrics.labels(inboundIstioLabels(snapshot, principal))),
      idleTimeoutMs: options.tcpIdleTimeoutMs,
      connectTimeoutMs: options.upstream?.connectTimeoutMs,
    });
    this.#server = net.createServer({ allowHalfOpen: true }, (raw) => this.#onConnection(raw));
  }

  /** The bound port (after {@link start}). */
  get port(): number {
    return this.#port;
  }

  /** Open downstream connections. */
  get connectionCount(): number {
    return this.#conns.size;
  }

  /** Times the TLS server was (re)built for a new certificate. */
  get tlsBuilds(): number {
    return this.#front.tlsBuilds;
  }

  /** Binds the port and starts accepting. */
  async start(): Promise<void> {
    this.#port = await listen(
      this.#server,
      this.#o,
      (err: Error) => this.#log.error("inbound listener error", { error: err.message }),
    );
    const timer = setInterval(
      () => this.#guard(undefined, "sweep", () => this.#sweep()),
      sweepIntervalMs(this.#connLimits),
    );
    Deno.unrefTimer(timer);
    this.#timer = timer;
    this.#log.info("inbound listener started", {
      address: `${this.#o.address}:${this.#port}`,
      app: `${this.#o.appAddress}:${this.#o.appPort}`,
    });
  }

  /** Stops accepting, closes every connection and the upstream pool. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const c of this.#conns) c.io?.destroy();
    this.#tcp.close();
    this.#h2.close();
    const released = this.#accepted.closeAll();
    this.#pool.close();
    await Promise.all([closed, released]);
  }

  #onConnection(raw: net.Socket): void {
    raw.on("error", ignore);
    this.#accepted.add(raw);
    if (!this.#slots.acquire()) {
      // Envoy's listener connection limit: closed at once, counted as downstream_cx_overflow.
      this.observer.limitHit("overflow");
      raw.destroy();
      return;
    }
    const conn = new Conn(raw, `${raw.remoteAddress}:${raw.remotePort}`, Date.now());
    this.observer.connectionOpened();
    this.#conns.add(conn);
    this.#byRaw.set(raw, conn);
    raw.once("close", () => {
      this.#slots.release();
      this.#conns.delete(conn);
      this.observer.connectionClosed();
    });
    raw.setNoDelay(true);
    let atOnce = false;
    this.#guard(conn, "accept", () => (atOnce = this.#plainTcpAtOnce(conn)));
    if (atOnce || raw.destroyed) return;
    raw.once("data", (first: Uint8Array) => this.#guard(conn, "sniff", () => this.#front.sniff(conn, first)));
    // Closed before sending anything (a port probe): with allowHalfOpen nothing else would close it.
    raw.once("end", () => {
      if (conn.state === SNIFF) raw.destroy();
    });
  }

  /**
   * Carries a connection as plain TCP at accept when nothing is to be sniffed (a DISABLE port whose
   * protocol is TCP), so that a server-first protocol (MySQL's greeting) works; false otherwise.
   */
  #plainTcpAtOnce(conn: Conn): boolean {
    const snapshot = this.#o.snapshot();
    if (inboundModeOf(snapshot, this.#mtlsPort) !== "DISABLE") return false;
    if (portRouteOf(snapshot, this.#mtlsPort) !== "tcp") return false;
    this.observer.connectionServed("plaintext");
    this.#carry(conn, conn.raw, null, "tcp", null);
    return true;
  }

  /**
   * Runs an event handler so that nothing it throws escapes into the event loop (which would end
   * the process): the error is logged and the connection, if any, closed.
   */
  #guard(conn: Conn | undefined, what: string, fn: () => void, socket?: net.Socket): void {
    try {
      fn();
    } catch (e) {
      this.#log.error("inbound listener error", { what, peer: conn?.peer, error: String(e) });
      socket?.destroy();
      conn?.io?.destroy();
      conn?.raw.destroy();
    }
  }

  #connOf(socket: tls.TLSSocket): Conn | undefined {
    const parent = (socket as unknown as { _parent?: net.Socket })._parent;
    return parent === undefined ? undefined : this.#byRaw.get(parent);
  }

  /** Carries an accepted connection as its port's protocol says (./dispatch.ts). */
  #dispatch(conn: Conn, socket: net.Socket, peer: PeerIdentity | null): void {
    // Mutual TLS selected h2 (offered on HTTP2 and GRPC ports only): HTTP/2, whatever the port says.
    if ((socket as tls.TLSSocket).alpnProtocol === "h2") {
      return this.#carry(conn, socket, peer, "http2", null);
    }
    const route = portRouteOf(this.#o.snapshot(), this.#mtlsPort);
    if (route !== "detect") {
      this.#carry(conn, socket, peer, route, null);
      return;
    }
    conn.state = HANDSHAKE;
    detectFirstBytes(
      socket,
      (protocol, unread) =>
        this.#guard(
          conn,
          "detect",
          () => this.#carry(conn, socket, peer, detectedCarriage(protocol), unread),
          socket,
        ),
    );
  }

  #carry(
    conn: Conn,
    socket: net.Socket,
    peer: PeerIdentity | null,
    carriage: InboundCarriage,
    unread: Uint8Array | null,
  ): void {
    if (carriage === "http1") {
      this.#serveHttp(conn, socket, peer);
      return;
    }
    if (carriage === "http2" && this.#o.http2 !== undefined) {
      conn.state = RELAYING;
      this.#o.http2({ socket, raw: conn.raw, peer, port: this.#mtlsPort });
      return;
    }
    if (carriage === "http2") {
      this.#serveHttp2(conn, socket, peer);
      return;
    }
    conn.state = RELAYING;
    this.#tcp.serve({ socket, raw: conn.raw, peer, peerText: conn.peer, unread });
  }

  /**
   * Serves HTTP/2 (./http2.ts): at once when mutual TLS selected `h2`; else when the connection starts
   * with the preface, HTTP/1.1 otherwise (an HTTP2 or GRPC port takes HTTP/1.1 too, as Envoy's AUTO
   * codec). The HTTP/2 codec keeps its own limits (the listener's idle timeout through ./http2.ts).
   */
  #serveHttp2(conn: Conn, socket: net.Socket, peer: PeerIdentity | null): void {
    conn.state = HANDSHAKE;
    // After first-bytes detection over mutual TLS the TLS transport is held (../tcp/relay.ts).
    resumeReading(socket);
    if ((socket as tls.TLSSocket).alpnProtocol === "h2") return this.#serveH2(conn, socket, peer, "alpn");
    sniffPreface(
      socket,
      this.#handshakeTimeoutMs,
      (h2) =>
        this.#guard(
          conn,
          "sniff",
          () => h2 ? this.#serveH2(conn, socket, peer, "preface") : this.#serveHttp(conn, socket, peer),
          socket,
        ),
    );
  }

  /** Hands the connection to ./http2.ts; `h1c`: its streams go to the application as HTTP/1.1. */
  #serveH2(conn: Conn, socket: net.Socket, peer: PeerIdentity | null, via: string, h1c = false): void {
    conn.state = RELAYING;
    this.#log.debug("HTTP/2 connection", { peer: conn.peer, via, mtls: peer !== null });
    // The first HTTP/2 connection waits for the codec's import: its bytes stay in the socket meanwhile.
    if (this.#h2.loaded === undefined) pauseReading(socket);
    this.#h2.use(
      (h2) =>
        this.#guard(conn, "http2", () => {
          if (socket.destroyed) return;
          h2.serve(
            socket,
            {
              principal: peer?.principal,
              peerIp: conn.raw.remoteAddress ?? "",
              localIp: conn.raw.localAddress ?? "",
              port: this.#mtlsPort,
              sni: peer?.sni,
              peer: conn.peer,
            },
            peer === null ? null : latin1(peer.xfcc, 0, peer.xfcc.length),
            h1c ? this.#pool : undefined,
          );
          resumeReading(socket);
        }, socket),
      (e) => {
        this.#log.error("HTTP/2 codec not loaded", { peer: conn.peer, error: String(e) });
        socket.destroy();
        conn.raw.destroy();
      },
    );
  }

  /**
   * An h2c client on an HTTP/1.1 port (Envoy's connection manager, codec AUTO, takes it; the
   * application still gets HTTP/1.1): only on the HTTP/1.1 parser's 505 for the first head, so
   * HTTP/1.1 requests pay nothing. False (the 505) unless `chunk` starts with the whole preface.
   */
  #takeOverH2c(
    conn: Conn,
    socket: net.Socket,
    peer: PeerIdentity | null,
    io: NodeSocketIo,
    chunk: Uint8Array,
  ): boolean {
    if (prefaceState(chunk) !== 1) return false;
    const parts = [chunk];
    try {
      for (let c = io.read(); c !== undefined && c !== null; c = io.read()) parts.push(c);
    } catch {
      return false;
    }
    io.detach();
    conn.io = null;
    conn.session = null;
    socket.unshift(concat(parts, parts.reduce((n, p) => n + p.length, 0)));
    this.#serveH2(conn, socket, peer, "h2c on an HTTP/1.1 port", true);
    return true;
  }

  /** Serves HTTP/1.1 on the connection; `peer` is what mutual TLS established, null for plain text. */
  #serveHttp(conn: Conn, socket: net.Socket, peer: PeerIdentity | null): void {
    conn.state = SERVING;
    const raw = conn.raw;
    const filter = new InboundPolicyFilter(this.#o.snapshot, {
      principal: peer?.principal,
      peerIp: raw.remoteAddress ?? "",
      localIp: raw.localAddress ?? "",
      port: this.#mtlsPort,
      sni: peer?.sni,
      peer: conn.peer,
    }, this.#log);
    const io = new NodeSocketIo(socket);
    // After first-bytes detection over mutual TLS the TLS transport is held (../tcp/relay.ts).
    resumeReading(socket);
    conn.io = io;
    const metrics = this.#o.requestMetrics;
    const observer = metrics === undefined ? this.observer : new MeteredObserver(
      this.observer,
      metrics.labels(inboundIstioLabels(this.#o.snapshot(), peer?.principal ?? null)),
    );
    const session = new Http1Session(io, {
      upstream: this.#pool,
      observer,
      log: this.#log,
      peer: conn.peer,
      xfccElement: peer?.xfcc ?? null,
      filter,
      defaultHost: this.#defaultHost,
      limits: this.#limits,
      http2Preface: (_down, chunk) => this.#takeOverH2c(conn, socket, peer, io, chunk),
    });
    conn.session = session;
    session.run();
  }

  #sweep(): void {
    const now = Date.now();
    const limits = this.#connLimits;
    for (const c of this.#conns) {
      if (c.closing || c.state === RELAYING) continue;
      if (c.state !== SERVING) {
        if (now - c.since > this.#handshakeTimeoutMs) {
          this.observer.connectionRefused("timeout");
          this.#log.debug("connection closed: no request or handshake in time", { peer: c.peer });
          c.raw.destroy();
        } else {
          const verdict = c.clock.check(now, null, null, limits);
          if (verdict === KEEP) continue;
          this.observer.limitHit(limitKindOf(verdict));
          this.#log.debug("connection closed: no request head in time", { peer: c.peer });
          c.raw.destroy();
        }
        continue;
      }
      const verdict = c.clock.check(now, c.io, c.session, limits);
      if (verdict !== KEEP) {
        c.closing = true;
        this.#log.debug("connection closed: timeout", {
          peer: c.peer,
          timeout: timeoutName(verdict),
        });
        closeForLimit(verdict, c.io!, c.session!, this.observer);
      }
    }
    this.#pool.sweep(now);
    this.#h2.sweep(now);
  }
}
