/**
 * The connections of the agent's gRPC channels (grpc_channel.ts) to meshd: plain TCP for meshd's
 * --grpcAddr, or mutual TLS with node:tls for --secureGRPCAddr, trusting ONLY the configured roots
 * (node:tls `ca` is the whole trust store; Deno's `fetch`/`createHttpClient({caCerts})` would add the
 * process's default roots, so a public CA's certificate for the dialled name would pass: measured,
 * README.md).
 *
 * Server identity, shared with meshctl's grpc-js credentials (shared/internal/tls/meshd_roots.ts
 * `meshdIdentity`): with `serverName` meshd's certificate must carry that name (DNS SAN) whatever address
 * is dialled; without it the dialled host (a DNS name, or an IP against the certificate's IP SANs; Deno's
 * node:tls refuses an IP as SNI, so the SNI is then a placeholder and the IP is checked by
 * checkServerIdentity). ALPN h2 is offered and must be
 * selected, as meshd's gRPC ports do (grpc-js refused a server that did not select it too).
 *
 * @module
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { hostOf, meshdIdentity, type MeshdTransportSecurity } from "../../shared/internal/tls/meshd_roots.ts";

/** Default time for TCP and TLS handshakes, ms. */
export const CONNECT_TIMEOUT_MS = 10_000;

const ABANDONED = "the dial was abandoned: the channel is closed";

/** Where meshd is and how to verify it. */
export interface MeshdTarget extends MeshdTransportSecurity {
  /** `host:port` (an IPv6 host in brackets). */
  address: string;
  /** The name meshd's certificate must carry; default the dialled host. */
  serverName?: string;
  /** Handshake deadline, ms; default {@link CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
}

/** A failed connect; `tls` when the TLS handshake or meshd's certificate was the reason. */
export class DialError extends Error {
  /** @param tls whether TLS refused; @param message why */
  constructor(readonly tls: boolean, message: string) {
    super(message);
    this.name = "DialError";
  }
}

/** The port of `host:port` or `[v6]:port`. */
export function portOf(address: string): number {
  const port = Number(/:(\d+)$/.exec(address)?.[1]);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`no port in ${address}`);
  return port;
}

/**
 * The `:authority` of requests: `serverName:port` when a server name is given (the name meshd's
 * certificate is checked against), else the address as dialled.
 */
export function authorityOf(target: Pick<MeshdTarget, "address" | "serverName">): string {
  if (!target.serverName) return target.address;
  const name = target.serverName;
  return `${name.includes(":") ? `[${name}]` : name}:${portOf(target.address)}`;
}

/**
 * Checks `target` without connecting.
 *
 * @throws Error when the address has no port or TLS is asked for without PEM roots
 */
export function checkTarget(target: MeshdTarget): void {
  portOf(target.address);
  if (!target.plaintext && !target.rootsPem?.includes("-----BEGIN CERTIFICATE-----")) {
    throw new Error("the roots to verify meshd must be PEM certificates");
  }
}

/**
 * Connects to meshd: TCP, then (unless plain text) mutual TLS verified as the module doc says.
 *
 * @param signal abandons the dial (its socket destroyed, its timer cleared) when aborted: a closed channel
 * @returns the connected socket (TLS: handshake done, meshd verified, ALPN h2 selected)
 * @throws DialError when the connection, the handshake or meshd's certificate fails, time runs out, or
 *   `signal` aborts first
 */
export function dialMeshd(target: MeshdTarget, signal?: AbortSignal): Promise<net.Socket> {
  checkTarget(target);
  const host = hostOf(target.address);
  const port = portOf(target.address);
  const timeoutMs = target.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  if (signal?.aborted) return Promise.reject(new DialError(false, ABANDONED));
  return new Promise<net.Socket>((resolve, reject) => {
    let socket: net.Socket;
    const timer = setTimeout(
      () => fail(new DialError(false, `no connection within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const abandon = (): void => fail(new DialError(false, ABANDONED));
    signal?.addEventListener("abort", abandon, { once: true });
    let settled = false;
    const fail = (e: DialError): void => {
      if (settled) return; // later errors are the codec's (it listens too)
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", abandon);
      socket.destroy();
      reject(e);
    };
    const done = (): void => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", abandon);
      resolve(socket);
    };
    if (target.plaintext) {
      socket = net.connect({ host, port });
      socket.once("connect", done);
    } else {
      const identity = meshdIdentity(target.address, target.serverName);
      const tlsSocket = tls.connect({
        host,
        port,
        servername: identity.servername,
        ca: target.rootsPem,
        cert: target.clientCertificate?.certChainPem,
        key: target.clientCertificate?.privateKeyPem,
        ALPNProtocols: ["h2"],
        rejectUnauthorized: true,
        ...(identity.checkServerIdentity ? { checkServerIdentity: identity.checkServerIdentity } : {}),
      });
      socket = tlsSocket;
      tlsSocket.once("secureConnect", () => {
        if (tlsSocket.alpnProtocol !== "h2") {
          return fail(new DialError(true, `meshd selected ALPN ${tlsSocket.alpnProtocol || "none"}, not h2`));
        }
        done();
      });
    }
    // An error after the TCP connect on the TLS port is the handshake's (or meshd's certificate's).
    let tcpConnected = false;
    socket.once("connect", () => void (tcpConnected = true));
    const onError = (e: Error): void => fail(new DialError(!target.plaintext && tcpConnected, e.message));
    socket.once("error", onError);
  });
}
