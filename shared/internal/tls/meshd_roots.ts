/**
 * meshd's address, name and roots as the proxy's agent and meshctl need them, without gRPC: the host of
 * an address, the name meshd's certificate is checked against (and the SNI that carries it), and the
 * roots that meshd's serving certificate is verified with. Kept apart from meshd_channel.ts (grpc-js
 * credentials) so that the proxy, whose agent talks gRPC on the project's HTTP/2 codec
 * (proxy/agent/meshd_dial.ts), does not load grpc-js for them.
 *
 * @module
 */
import { isIP } from "node:net";
import * as tls from "node:tls";

/** The SNI sent when an IP address is dialled without a server name (meshd ignores SNI). */
export const IP_TARGET_SNI = "meshd";

/** A certificate to present: the PEM chain (leaf first) and its PKCS #8 key in PEM. */
export interface PemCertificate {
  certChainPem: string;
  privateKeyPem: string;
}

/**
 * How a client of meshd's gRPC (the proxy's agent, meshctl) protects the connection: plain TCP
 * (meshd's --grpcAddr), or TLS that trusts only `rootsPem` and may present a workload certificate.
 */
export interface MeshdTransportSecurity {
  /** Plain TCP: no TLS. */
  plaintext?: boolean;
  /** PEM roots meshd's serving certificate must chain to: the only ones trusted. Required unless `plaintext`. */
  rootsPem?: string;
  /** The certificate to present (the workload's, or cert-chain.pem and key.pem of a `--cert-dir`). */
  clientCertificate?: PemCertificate;
}

/** How meshd's serving certificate is checked for one address. */
export interface MeshdIdentity {
  /** The TLS server name (SNI) to send. */
  servername: string;
  /**
   * Set when an IP address is dialled without a server name: the IP is checked against the
   * certificate's IP SANs (Deno's node:tls refuses an IP as SNI, so the SNI is {@link IP_TARGET_SNI}).
   * Otherwise node:tls's default check of `servername` applies.
   */
  checkServerIdentity?: (name: string, peer: tls.PeerCertificate) => Error | undefined;
}

/**
 * The identity meshd must prove at `address`: with `serverName` that name (a DNS SAN), whatever
 * address is dialled; without it the dialled host (a DNS name, or an IP against the IP SANs).
 */
export function meshdIdentity(address: string, serverName?: string): MeshdIdentity {
  if (serverName) return { servername: serverName };
  const host = hostOf(address);
  if (isIP(host) === 0) return { servername: host };
  return {
    servername: IP_TARGET_SNI,
    checkServerIdentity: (_name, peer) => tls.checkServerIdentity(host, peer),
  };
}

/** The host part of `host:port`, `[v6]:port` or a bare host. */
export function hostOf(address: string): string {
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracket) return bracket[1];
  const colon = address.lastIndexOf(":");
  if (colon > 0 && address.indexOf(":") === colon) return address.slice(0, colon);
  return address;
}

/**
 * The roots to verify meshd with: the configured ones (root-cert.pem) and those meshd sent with the
 * workload certificate, each certificate once. The received bundle came over a connection verified
 * with roots already trusted, and after meshd rotates its self-signed root it holds the new root,
 * which the configured file may lack (istiod's roots reach pilot-agent the same way, through the CA's
 * answer and the istio-ca-root-cert ConfigMap).
 */
export function meshdRoots(configuredPem: string, receivedPem?: string): string {
  const blocks = `${configuredPem}\n${receivedPem ?? ""}`.match(
    /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g,
  ) ?? [];
  return [...new Set(blocks.map((b) => b.replace(/\r/g, "")))].map((b) => b + "\n").join("");
}
