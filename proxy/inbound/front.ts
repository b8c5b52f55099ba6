/**
 * The PeerAuthentication front of an inbound listener: what happens to a connection between its
 * first byte and the moment it is served (HTTP or TCP, ./dispatch.ts). The mode is read from the
 * current runtime snapshot when the first byte arrives, so a policy change applies to the next
 * connection:
 *
 * - STRICT: a first byte of 0x16 (a TLS handshake record) goes to the mutual-TLS server; anything
 *   else is answered with a TCP reset (curl: `000`, exit 56, as with Istio).
 * - PERMISSIVE: anything other than 0x16 is served as plain text, on the same port. For 0x16 the
 *   ClientHello is read without consuming it (../tls/client_hello.ts, as Envoy's `tls_inspector`):
 *   one that offers an Istio ALPN value (../tls/mesh_alpn.ts: a mesh client sidecar) goes to mutual
 *   TLS; one without goes, on a TCP or auto-detected port, to the plain-text side as opaque bytes
 *   (./dispatch.ts carries it as TCP: the client's own TLS with the application, end to end, under
 *   the port's L4 AuthorizationPolicy with no principal), as Istio's PERMISSIVE filter chains
 *   (MTLS by `application_protocols`, then plain TLS, then plain text). On an HTTP, HTTP2 or GRPC
 *   port Istio has no chain for plain TLS and closes it; here it still goes to mutual TLS, so that a
 *   proxyless gRPC client (ALPN `h2` only, a mesh certificate) is served and any other TLS client
 *   fails the handshake. A ClientHello that is malformed, split over records or larger than a record
 *   goes to mutual TLS, whose handshake refuses it (as before ALPN was read); one that does not
 *   arrive before the listener's first-byte deadline is closed by it.
 * - DISABLE: everything is plain text.
 *
 * Mutual TLS requires a client certificate that chains to the mesh roots and carries a SPIFFE ID of
 * the mesh's trust domain (./tls_context.ts). A failed handshake or refused identity is logged
 * (warn) with the peer address and the reason, and the connection closed.
 *
 * @module
 */
import type net from "node:net";
import type tls from "node:tls";
import { ascii } from "../http/chars.ts";
import { ConnectionClock } from "../http/conn_limits.ts";
import type { Http1Session } from "../http/session.ts";
import type { Log } from "../http/session_types.ts";
import type { SocketIo } from "../http/socket_io.ts";
import { tryParseSpiffeId } from "../../shared/identity/mod.ts";
import { inboundModeOf, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { InboundObserver } from "./observer.ts";
import { checkPeer, InboundTls, type ServingContext } from "./tls_context.ts";
import { readClientHello } from "../tls/client_hello.ts";
import { INBOUND_H2_SERVER_ALPN, offersMeshAlpn } from "../tls/mesh_alpn.ts";
import { pauseReading } from "../tcp/relay.ts";

/** Waiting for the first byte. */
export const SNIFF = 0;
/** In the TLS handshake, or reading the first bytes for protocol detection. */
export const HANDSHAKE = 1;
/** Served by the HTTP/1.1 session (its timeouts apply). */
export const SERVING = 2;
/** Relayed as TCP (the relay's idle timeout applies). */
export const RELAYING = 3;

/** One accepted connection. */
export class Conn {
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

/** What mutual TLS established about the peer. */
export interface PeerIdentity {
  /** The X-Forwarded-Client-Cert element of the peer (HTTP only). */
  xfcc: Uint8Array;
  /** The peer's SPIFFE ID. */
  principal: string;
  /** The server name the client sent, if any. */
  sni: string | undefined;
}

/** Settings of a {@link PeerAuthFront}. */
export interface PeerAuthFrontOptions {
  /** The container port whose mutual TLS mode applies. */
  mtlsPort: number;
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: InboundObserver;
  /** The connection of a TLS socket (by the raw socket it wraps). */
  connOf(socket: tls.TLSSocket): Conn | undefined;
  /** Runs an event handler so that nothing it throws escapes (see the listener). */
  guard(conn: Conn | undefined, what: string, fn: () => void, socket?: net.Socket): void;
  /** Whether the listener is closed (a late handshake is then dropped). */
  closed(): boolean;
  /** Serves an accepted connection: `peer` is what mutual TLS established, null for plain text. */
  serve(conn: Conn, socket: net.Socket, peer: PeerIdentity | null): void;
  /** Whether mutual TLS offers ALPN `h2` (and `http/1.1`) now: the port is HTTP2 or GRPC (./http2.ts). */
  alpnH2?: () => boolean;
  /**
   * Whether, under PERMISSIVE, TLS without an Istio ALPN value is the application's own (a TCP or
   * auto-detected port) and passes to it; otherwise it goes to mutual TLS. Never by default.
   */
  tlsPassthrough?: () => boolean;
}

/** Applies the port's PeerAuthentication mode to each new connection. */
export class PeerAuthFront {
  readonly #o: PeerAuthFrontOptions;
  readonly #tls: InboundTls;
  /** The same with ALPN `h2` offered. */
  readonly #tlsH2: InboundTls;

  constructor(options: PeerAuthFrontOptions) {
    this.#o = options;
    const o = options;
    const args = [
      (socket: tls.TLSSocket, ctx: ServingContext) =>
        o.guard(o.connOf(socket), "secure", () => this.#onSecure(socket, ctx), socket),
      (err: Error, socket: tls.TLSSocket) =>
        o.guard(o.connOf(socket), "tls error", () => this.#onTlsError(err, socket), socket),
      (err: Error) => o.log.error("cannot load the workload certificate", { error: err.message }),
    ] as const;
    this.#tls = new InboundTls(...args);
    this.#tlsH2 = new InboundTls(...args, INBOUND_H2_SERVER_ALPN);
  }

  /** Times the TLS server was (re)built for a new certificate. */
  get tlsBuilds(): number {
    return this.#tls.builds + this.#tlsH2.builds;
  }

  /** Decides the connection on its first bytes (`first`, already read and to be put back). */
  sniff(conn: Conn, first: Uint8Array): void {
    const o = this.#o;
    const raw = conn.raw;
    raw.pause();
    raw.unshift(first);
    const snapshot = o.snapshot();
    const mode = inboundModeOf(snapshot, o.mtlsPort);
    const tlsRecord = first[0] === 0x16;
    if (mode === "DISABLE" || (mode === "PERMISSIVE" && !tlsRecord)) {
      o.observer.connectionServed("plaintext");
      o.serve(conn, raw, null);
      return;
    }
    if (!tlsRecord) {
      o.observer.connectionRefused("plaintext_in_strict");
      o.log.debug("plain text refused on a STRICT port", { peer: conn.peer, port: o.mtlsPort });
      raw.resetAndDestroy();
      return;
    }
    if (mode === "PERMISSIVE" && o.tlsPassthrough?.()) {
      conn.state = HANDSHAKE;
      this.#inspect(conn);
      return;
    }
    this.#mtls(conn, snapshot);
  }

  /**
   * Reads the ClientHello on a PERMISSIVE port without consuming it, then picks mutual TLS (an Istio
   * ALPN value offered) or the application's own TLS (none).
   */
  #inspect(conn: Conn): void {
    const o = this.#o;
    const raw = conn.raw;
    readClientHello(raw).then((hello) =>
      o.guard(conn, "client hello", () => {
        if (hello.status === "closed" || raw.destroyed || o.closed()) return;
        if (hello.status === "timeout") {
          raw.destroy();
          return;
        }
        if (hello.status === "done" && !offersMeshAlpn(hello.alpn)) {
          o.log.debug("TLS without an Istio ALPN passed to the application", {
            peer: conn.peer,
            port: o.mtlsPort,
            sni: hello.sni,
            alpn: hello.alpn.join(","),
          });
          o.observer.connectionServed("plaintext");
          o.serve(conn, raw, null);
          return;
        }
        o.log.debug("TLS to mutual TLS", {
          peer: conn.peer,
          port: o.mtlsPort,
          alpn: hello.status === "done" ? hello.alpn.join(",") : `none (${hello.status})`,
        });
        this.#mtls(conn, o.snapshot());
      }, raw)
    );
    raw.resume();
  }

  /** Hands the connection (paused, its bytes put back) to the mutual TLS server. */
  #mtls(conn: Conn, snapshot: RuntimeSnapshot): void {
    const o = this.#o;
    const raw = conn.raw;
    const ctx = (o.alpnH2?.() ? this.#tlsH2 : this.#tls).contextFor(snapshot.certificate);
    if (ctx === null) {
      o.observer.connectionRefused("no_certificate");
      o.log.warn("TLS connection refused: no workload certificate yet", { peer: conn.peer });
      raw.resetAndDestroy();
      return;
    }
    conn.state = HANDSHAKE;
    conn.trustDomains = trustDomainsOf(snapshot);
    ctx.server.emit("connection", raw);
  }

  #onSecure(socket: tls.TLSSocket, ctx: ServingContext): void {
    const o = this.#o;
    socket.on("error", ignore);
    // Held at once (its TCP handle stops reading; the path that serves it resumes it): a TLSSocket
    // that buffers a full highWaterMark (64 KiB) with no reader, e.g. while the TCP path connects to
    // the application, is stopped by its stream, and in Deno 2.9 it then never reports the peer's FIN
    // (../tcp/README.md).
    pauseReading(socket);
    const conn = o.connOf(socket);
    if (conn === undefined || o.closed()) {
      socket.destroy();
      return;
    }
    o.observer.handshake(true);
    const peerCert = socket.getPeerCertificate(true);
    if (!socket.authorized || peerCert?.raw === undefined) {
      o.observer.connectionRefused("handshake_failed");
      o.log.warn("TLS handshake failed", {
        peer: conn.peer,
        reason: String(socket.authorizationError ?? "no client certificate"),
      });
      socket.destroy();
      return;
    }
    const check = checkPeer(new Uint8Array(peerCert.raw), conn.trustDomains, ctx.by);
    if (!check.ok) {
      o.observer.connectionRefused("untrusted_identity");
      o.log.warn("TLS connection refused", { peer: conn.peer, reason: check.reason });
      socket.destroy();
      return;
    }
    o.observer.connectionServed("mtls");
    const sni = (socket as unknown as { servername?: string | false }).servername;
    o.serve(conn, socket, {
      xfcc: ascii(check.xfccElement),
      principal: check.spiffeId,
      sni: typeof sni === "string" && sni !== "" ? sni : undefined,
    });
  }

  #onTlsError(err: Error, socket: tls.TLSSocket): void {
    const o = this.#o;
    const conn = o.connOf(socket);
    const authError = (socket as unknown as { authorizationError?: unknown }).authorizationError;
    const code = (err as Error & { code?: string }).code;
    const reason = authError
      ? String(authError)
      : code !== undefined && !err.message.includes(code)
      ? `${err.message} (${code})`
      : err.message;
    o.observer.handshake(false);
    o.observer.connectionRefused("handshake_failed");
    o.log.warn("TLS handshake failed", { peer: conn?.peer ?? "unknown", reason });
    socket.destroy();
    conn?.raw.destroy();
  }
}

const ignore = (): void => {};

/** The trust domains whose SPIFFE IDs are accepted: the workload's, else the one of its certificate. */
function trustDomainsOf(snapshot: RuntimeSnapshot): string[] {
  const td = snapshot.workload?.trustDomain;
  if (td) return [td];
  const own = snapshot.certificate ? tryParseSpiffeId(snapshot.certificate.spiffeId) : undefined;
  return own ? [own.trustDomain] : [];
}
