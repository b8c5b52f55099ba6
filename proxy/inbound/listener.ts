/**
 * The inbound listener of one container port: accepts connections on the workload address, applies
 * the port's effective PeerAuthentication mode, and forwards HTTP/1.1 to the application.
 *
 * Per connection, the mode is read from the current runtime snapshot when the first byte arrives
 * (so a policy change applies to the next connection without restarting anything):
 *
 * - STRICT: a first byte of 0x16 (a TLS handshake record) goes to the mutual-TLS server; anything
 *   else is answered with a TCP reset (curl: `000`, exit 56, as with Istio).
 * - PERMISSIVE: 0x16 goes to mutual TLS, anything else is served as plain text, on the same port.
 * - DISABLE: everything is plain text (a TLS handshake then fails as a malformed request: 400).
 *
 * Mutual TLS requires a client certificate that chains to the mesh roots and carries a SPIFFE ID of
 * the mesh's trust domain; the request then carries X-Forwarded-Client-Cert (see ./xfcc.ts). A
 * failed handshake or refused identity is logged (warn) with the peer address and the reason.
 *
 * Every request then passes the filter chain of ../filters (path normalization with the mesh's option, JWT
 * authentication, authorization) with the connection's attributes: the peer's SPIFFE ID (mutual
 * TLS), the peer and local addresses, the container port and the SNI.
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
import { Http1Session } from "../http/session.ts";
import type { Log } from "../http/session_types.ts";
import { SocketIo } from "../http/socket_io.ts";
import { tryParseSpiffeId } from "../../shared/identity/mod.ts";
import { inboundModeOf, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import { type ConnectionAttributes, InboundPolicyFilter } from "../filters/mod.ts";
import { type InboundObserver, InboundStats } from "./observer.ts";
import { type IstioMetrics, MeteredObserver } from "../http/istio_metrics.ts";
import { inboundIstioLabels } from "../http/istio_labels.ts";
import { checkPeer, InboundTls, type ServingContext } from "./tls_context.ts";
import { UpstreamPool } from "./upstream_pool.ts";
import { http2Admission, InboundHttp2 } from "./http2.ts";
import { sniffPreface } from "../h2proxy/preface.ts";

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
  /** Upstream pool settings. */
  upstream?: { maxIdle?: number; idleTimeoutMs?: number; connectTimeoutMs?: number };
}

const SNIFF = 0;
const HANDSHAKE = 1;
const SERVING = 2;
/** Served by the HTTP/2 codec (./http2.ts), which keeps its own limits. */
const HTTP2 = 3;

/** One accepted connection. */
class Conn {
  state = SNIFF;
  session: Http1Session | null = null;
  io: SocketIo | null = null;
  trustDomains: string[] = [];
  closing = false;
  readonly clock: ConnectionClock;
  constructor(readonly raw: net.Socket, readonly peer: string, readonly since: number) {
    this.clock = new ConnectionClock(since);
  }
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
  readonly #tls: InboundTls;
  /** The same with ALPN `h2` offered: ports whose protocol is HTTP2 or GRPC. */
  readonly #tlsH2: InboundTls;
  readonly #h2: InboundHttp2;
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
    const tlsArgs = [
      (socket: tls.TLSSocket, ctx: ServingContext) =>
        this.#guard(this.#connOf(socket), "secure", () => this.#onSecure(socket, ctx), socket),
      (err: Error, socket: tls.TLSSocket) =>
        this.#guard(this.#connOf(socket), "tls error", () => this.#onTlsError(err, socket), socket),
      (err: Error) => this.#log.error("cannot load the workload certificate", { error: err.message }),
    ] as const;
    this.#tls = new InboundTls(...tlsArgs);
    this.#tlsH2 = new InboundTls(...tlsArgs, ["h2", "http/1.1"]);
    this.#h2 = new InboundHttp2({
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
    return this.#tls.builds;
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
    const released = this.#accepted.closeAll();
    this.#pool.close();
    this.#h2.close();
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
    raw.once("data", (first: Uint8Array) => this.#guard(conn, "sniff", () => this.#sniff(conn, first)));
    // Closed before sending anything (a port probe): with allowHalfOpen nothing else would close it.
    raw.once("end", () => {
      if (conn.state === SNIFF) raw.destroy();
    });
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

  #sniff(conn: Conn, first: Uint8Array): void {
    const raw = conn.raw;
    raw.pause();
    raw.unshift(first);
    const snapshot = this.#o.snapshot();
    const mode = inboundModeOf(snapshot, this.#mtlsPort);
    const tlsRecord = first[0] === 0x16;
    if (mode === "DISABLE" || (mode === "PERMISSIVE" && !tlsRecord)) {
      this.observer.connectionServed("plaintext");
      this.#serve(conn, raw, null);
      return;
    }
    if (!tlsRecord) {
      this.observer.connectionRefused("plaintext_in_strict");
      this.#log.debug("plain text refused on a STRICT port", { peer: conn.peer, port: this.#mtlsPort });
      raw.resetAndDestroy();
      return;
    }
    const tlsFor = http2Admission(snapshot, this.#mtlsPort) === "alpn" ? this.#tlsH2 : this.#tls;
    const ctx = tlsFor.contextFor(snapshot.certificate);
    if (ctx === null) {
      this.observer.connectionRefused("no_certificate");
      this.#log.warn("TLS connection refused: no workload certificate yet", { peer: conn.peer });
      raw.resetAndDestroy();
      return;
    }
    conn.state = HANDSHAKE;
    conn.trustDomains = trustDomainsOf(snapshot);
    ctx.server.emit("connection", raw);
  }

  #connOf(socket: tls.TLSSocket): Conn | undefined {
    const parent = (socket as unknown as { _parent?: net.Socket })._parent;
    return parent === undefined ? undefined : this.#byRaw.get(parent);
  }

  #onSecure(socket: tls.TLSSocket, ctx: ServingContext): void {
    socket.on("error", ignore);
    const conn = this.#connOf(socket);
    if (conn === undefined || this.#closed) {
      socket.destroy();
      return;
    }
    this.observer.handshake(true);
    const peerCert = socket.getPeerCertificate(true);
    if (!socket.authorized || peerCert?.raw === undefined) {
      this.observer.connectionRefused("handshake_failed");
      this.#log.warn("TLS handshake failed", {
        peer: conn.peer,
        reason: String(socket.authorizationError ?? "no client certificate"),
      });
      socket.destroy();
      return;
    }
    const check = checkPeer(new Uint8Array(peerCert.raw), conn.trustDomains, ctx.by);
    if (!check.ok) {
      this.observer.connectionRefused("untrusted_identity");
      this.#log.warn("TLS connection refused", { peer: conn.peer, reason: check.reason });
      socket.destroy();
      return;
    }
    this.observer.connectionServed("mtls");
    const sni = (socket as unknown as { servername?: string | false }).servername;
    this.#serve(conn, socket, {
      xfcc: ascii(check.xfccElement),
      principal: check.spiffeId,
      sni: typeof sni === "string" && sni !== "" ? sni : undefined,
    });
  }

  #onTlsError(err: Error, socket: tls.TLSSocket): void {
    const conn = this.#connOf(socket);
    const authError = (socket as unknown as { authorizationError?: unknown }).authorizationError;
    const code = (err as Error & { code?: string }).code;
    const reason = authError
      ? String(authError)
      : code !== undefined && !err.message.includes(code)
      ? `${err.message} (${code})`
      : err.message;
    this.observer.handshake(false);
    this.observer.connectionRefused("handshake_failed");
    this.#log.warn("TLS handshake failed", { peer: conn?.peer ?? "unknown", reason });
    socket.destroy();
    conn?.raw.destroy();
  }

  /**
   * Serves HTTP on the connection: HTTP/2 when mutual TLS selected ALPN `h2`, or when the port takes
   * HTTP/2 and the connection starts with its preface; else HTTP/1.1. `peer` is what mutual TLS
   * established, null for plain text.
   */
  #serve(conn: Conn, socket: net.Socket, peer: Peer | null): void {
    if ((socket as tls.TLSSocket).alpnProtocol === "h2") return this.#serveHttp2(conn, socket, peer, "alpn");
    if (http2Admission(this.#o.snapshot(), this.#mtlsPort) === "none") {
      return this.#serveHttp1(conn, socket, peer);
    }
    sniffPreface(socket, this.#handshakeTimeoutMs, (h2) =>
      this.#guard(
        conn,
        "sniff",
        () => h2 ? this.#serveHttp2(conn, socket, peer, "preface") : this.#serveHttp1(conn, socket, peer),
        socket,
      ));
  }

  #attributes(conn: Conn, peer: Peer | null): ConnectionAttributes {
    return {
      principal: peer?.principal,
      peerIp: conn.raw.remoteAddress ?? "",
      localIp: conn.raw.localAddress ?? "",
      port: this.#mtlsPort,
      sni: peer?.sni,
      peer: conn.peer,
    };
  }

  #serveHttp2(conn: Conn, socket: net.Socket, peer: Peer | null, via: "alpn" | "preface"): void {
    conn.state = HTTP2;
    this.#log.debug("HTTP/2 connection", { peer: conn.peer, via, mtls: peer !== null });
    const xfcc = peer === null ? null : latin1(peer.xfcc, 0, peer.xfcc.length);
    this.#h2.serve(socket, this.#attributes(conn, peer), xfcc);
    socket.resume();
  }

  #serveHttp1(conn: Conn, socket: net.Socket, peer: Peer | null): void {
    conn.state = SERVING;
    const filter = new InboundPolicyFilter(this.#o.snapshot, this.#attributes(conn, peer), this.#log);
    const io = new SocketIo(socket);
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
    });
    conn.session = session;
    session.run();
  }

  #sweep(): void {
    const now = Date.now();
    const limits = this.#connLimits;
    for (const c of this.#conns) {
      if (c.closing || c.state === HTTP2) continue;
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

/** What mutual TLS established about the client. */
interface Peer {
  xfcc: Uint8Array;
  principal: string;
  sni: string | undefined;
}

/** The trust domains whose SPIFFE IDs are accepted: the workload's, else the one of its certificate. */
function trustDomainsOf(snapshot: RuntimeSnapshot): string[] {
  const td = snapshot.workload?.trustDomain;
  if (td) return [td];
  const own = snapshot.certificate ? tryParseSpiffeId(snapshot.certificate.spiffeId) : undefined;
  return own ? [own.trustDomain] : [];
}
