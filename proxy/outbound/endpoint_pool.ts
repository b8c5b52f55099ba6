/**
 * Keep-alive connections to one upstream endpoint, plain text or mutual TLS (automatic mTLS): a
 * {@link ConnectionPool} whose connecting is a {@link Dialer}, so a failure carries a reason the proxy
 * can put in its 502 body.
 *
 * Mutual TLS presents the proxy's workload certificate, verifies the server's chain against the mesh
 * roots, and checks secure naming: the server's certificate must carry the endpoint's SPIFFE ID as a
 * URI SAN (host names are not checked, as in Istio).
 *
 * @module
 */
import net from "node:net";
import tls from "node:tls";
import { ConnectionPool, pooledNodeSocket } from "../http/connection_pool.ts";
import type { SocketIo } from "../http/socket_io.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";

/** Why a connection could not be made. */
export type DialFailure = "connect_failure" | "tls_failure" | "identity_mismatch" | "timeout";

/** A failed dial, with a reason for people. */
export class DialError extends Error {
  readonly kind: DialFailure;
  constructor(kind: DialFailure, message: string) {
    super(message);
    this.name = "DialError";
    this.kind = kind;
  }
}

/** Makes one connected (and, for TLS, verified) socket. */
export type Dialer = () => Promise<net.Socket>;

/** A plain TCP dialer. */
export function plainDialer(host: string, port: number, timeoutMs: number): Dialer {
  return () =>
    new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect({ host, port, allowHalfOpen: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new DialError("timeout", `connect to ${host}:${port} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once("error", (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new DialError("connect_failure", `connect to ${host}:${port} failed: ${errorText(err)}`));
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(socket);
      });
    });
}

/** URI SANs of a node peer certificate's `subjectaltname` (`URI:a, DNS:b, ...`). */
export function uriSans(subjectaltname: string | undefined): string[] {
  if (!subjectaltname) return [];
  return subjectaltname.split(/,\s*/).filter((s) => s.startsWith("URI:")).map((s) => s.slice(4));
}

/** One mutual TLS connection to dial: where, as whom, and whom the server must be. */
export interface MtlsTarget {
  host: string;
  port: number;
  /** The workload certificate to present; the server must chain to its `rootsPem`. */
  cert: CertificateInfo;
  /** The SPIFFE ID the server's certificate must carry among its URI SANs; "" accepts any SPIFFE ID. */
  identity: string;
  /** Connect and handshake deadline, ms. */
  timeoutMs: number;
  /**
   * The protocols offered: Istio's value for what the connection carries, then the real protocol if
   * any (../tls/mesh_alpn.ts), so that a PERMISSIVE server tells it from an app's own TLS.
   */
  alpn: readonly string[];
}

/**
 * A mutual TLS dialer on node:tls: presents `target.cert`, verifies the server against its roots and
 * requires `target.identity` among the server certificate's URI SANs (Istio's secure naming).
 * `allowHalfOpen`: the socket stays writable after the server's FIN (TCP proxying, ./tcp_forward.ts).
 */
export function mtlsDialer(target: MtlsTarget, allowHalfOpen = false): Dialer {
  const { host, port, cert, identity, timeoutMs, alpn } = target;
  return () =>
    new Promise<net.Socket>((resolve, reject) => {
      let connected = false;
      const socket = tls.connect({
        host,
        port,
        ca: cert.rootsPem,
        cert: cert.certChainPem,
        key: cert.privateKeyPem,
        rejectUnauthorized: true,
        // Secure naming replaces the host name check (endpoint certificates name no address).
        checkServerIdentity: () => undefined,
        minVersion: "TLSv1.2",
        ALPNProtocols: [...alpn],
        // node:tls passes it to the socket (tested in Deno); its typings omit it.
        ...{ allowHalfOpen },
      });
      socket.once("connect", () => (connected = true));
      const fail = (e: DialError) => {
        clearTimeout(timer);
        socket.destroy();
        reject(e);
      };
      const timer = setTimeout(
        () =>
          fail(new DialError("timeout", `TLS connect to ${host}:${port} timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      socket.once("error", (err: Error) => {
        const code = (err as Error & { code?: string }).code;
        if (!connected && (code === "ECONNREFUSED" || code === "EHOSTUNREACH" || code === "ENETUNREACH")) {
          fail(new DialError("connect_failure", `connect to ${host}:${port} failed: ${errorText(err)}`));
        } else {
          fail(new DialError("tls_failure", `TLS handshake with ${host}:${port} failed: ${errorText(err)}`));
        }
      });
      socket.once("secureConnect", () => {
        if (!socket.authorized) {
          fail(
            new DialError(
              "tls_failure",
              `TLS handshake with ${host}:${port} failed: ${
                socket.authorizationError ?? "server not verified"
              }`,
            ),
          );
          return;
        }
        const sans = uriSans(socket.getPeerCertificate()?.subjectaltname);
        const ok = identity === "" ? sans.some((u) => u.startsWith("spiffe://")) : sans.includes(identity);
        if (!ok) {
          fail(
            new DialError(
              "identity_mismatch",
              `upstream identity mismatch at ${host}:${port}: expected ${identity || "a SPIFFE ID"}, ` +
                `server presented ${sans.join(", ") || "no URI SAN"}`,
            ),
          );
          return;
        }
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(socket);
      });
    });
}

function errorText(err: Error): string {
  const code = (err as Error & { code?: string }).code;
  return code !== undefined && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}

/** Settings of an {@link EndpointPool}. */
export interface EndpointPoolOptions {
  dial: Dialer;
  /** Makes a connection as a {@link SocketIo} of its own kind (./deno_mtls.ts); replaces `dial`. */
  dialIo?: () => Promise<SocketIo>;
  /** Idle connections kept. Default 64. */
  maxIdle?: number;
  /** An idle connection is closed after this long. Default 60 s. */
  idleTimeoutMs?: number;
  /** Called for each new connection (counters). */
  onConnect?: () => void;
}

/** The connection pool to one endpoint. */
export class EndpointPool extends ConnectionPool {
  /** Last time the pool was used (ms), for dropping unused pools. */
  lastUsed = Date.now();

  constructor(options: EndpointPoolOptions) {
    const dial = options.dial;
    super({
      ...options,
      dial: options.dialIo ?? (async () => pooledNodeSocket(await dial())),
      closedError: () => new DialError("connect_failure", "upstream pool closed"),
    });
  }

  override idle(): SocketIo | null {
    this.lastUsed = Date.now();
    return super.idle();
  }

  /** A new connection. @throws {DialError} */
  override connect(): Promise<SocketIo> {
    this.lastUsed = Date.now();
    return super.connect();
  }
}
