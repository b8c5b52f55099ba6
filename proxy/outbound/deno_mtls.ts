/**
 * The mesh leg of automatic mutual TLS on Deno's own TLS client (`Deno.connectTls`, rustls) instead of
 * node:tls, with the same checks as {@link mtlsDialer}: the proxy's workload certificate presented,
 * the server's chain verified, and secure naming (the endpoint's SPIFFE ID among the server
 * certificate's URI SANs). Issue 17, item 2; measured in ../http/README.md "Socket views".
 *
 * Deno's public API cannot do the two checks, so this module does them itself after the handshake:
 * - **The server's certificate.** `Deno.TlsConn` shows no peer certificate in its public API; Deno's
 *   node:tls reads it through a method of the connection keyed by an internal symbol (described as
 *   `getPeerCertificate`, returning node's PeerCertificate shape: `subjectaltname`, `raw`). This module
 *   finds that method by its description; when a Deno version no longer has it, every dial fails
 *   (`tls_failure`, fail closed), it never skips the check.
 * - **The trust anchor.** `caCerts` are added to Deno's default roots (Mozilla's, or the system's),
 *   not put in their place, so rustls alone would accept a chain to any public CA. The leaf must
 *   therefore also be signed by one of the mesh roots, or by a CA certificate of the proxy's own chain
 *   (a plugged-in intermediate) that a mesh root signed; rustls has already checked the chain, the
 *   validity dates and the server's possession of the leaf's key.
 *
 * Host names are not checked (`unsafelyDisableHostnameVerification`): endpoint certificates name no
 * address, as with node:tls's `checkServerIdentity: () => undefined`; secure naming replaces it.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";
import { DenoConnIo } from "../http/deno_conn_io.ts";
import type { SocketIo } from "../http/socket_io.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";
import { DialError, type MtlsTarget, uriSans } from "./endpoint_pool.ts";

/** What the internal method returns (node's PeerCertificate, the fields read here). */
interface PeerCertificate {
  subjectaltname?: string;
  raw?: Uint8Array;
}

type PeerCertificateOf = (conn: Deno.TlsConn) => PeerCertificate | null;

let peerCertificateOf: PeerCertificateOf | null | undefined;

/**
 * The internal peer-certificate method of `Deno.TlsConn`, looked up once on a connection's prototype;
 * null when this Deno has none.
 */
function peerCertificateReader(conn: Deno.TlsConn): PeerCertificateOf | null {
  if (peerCertificateOf !== undefined) return peerCertificateOf;
  const proto = Object.getPrototypeOf(conn) as Record<symbol, unknown>;
  const sym = Object.getOwnPropertySymbols(proto).find((s) => s.description === "getPeerCertificate");
  const fn = sym === undefined ? undefined : proto[sym];
  peerCertificateOf = typeof fn === "function"
    ? (c) => (fn as (this: Deno.TlsConn, detailed: boolean) => PeerCertificate | null).call(c, false)
    : null;
  return peerCertificateOf;
}

/** PEM blocks of `pem` (certificates), in order. */
const anchorsCache = new WeakMap<CertificateInfo, X509Certificate[]>();

/**
 * The certificates a server leaf may be signed by: the mesh roots, and the CA certificates of the
 * proxy's own chain that a mesh root signed (directly or through another such CA). Per certificate
 * object, so a rotation brings its own.
 */
export function meshIssuers(cert: CertificateInfo): X509Certificate[] {
  let anchors = anchorsCache.get(cert);
  if (anchors !== undefined) return anchors;
  anchors = pemCertificates(cert.rootsPem).map((b) => new X509Certificate(b.pem));
  const cas = pemCertificates(cert.certChainPem).slice(1).map((b) => new X509Certificate(b.pem)).filter((c) =>
    c.ca
  );
  // Issuers first: each pass adds the intermediates that a known issuer signed.
  for (let added = true; added;) {
    added = false;
    for (const ca of cas) {
      if (anchors.includes(ca)) continue;
      if (anchors.some((a) => ca.checkIssued(a) && ca.verify(a.publicKey))) {
        anchors.push(ca);
        added = true;
      }
    }
  }
  anchorsCache.set(cert, anchors);
  return anchors;
}

/**
 * Why the server certificate of a finished handshake is not acceptable for `identity` (any SPIFFE
 * ID when empty), or null when it is.
 */
export function peerProblem(
  peer: PeerCertificate | null,
  cert: CertificateInfo,
  identity: string,
): { kind: "tls_failure" | "identity_mismatch"; reason: string } | null {
  if (peer === null || peer.raw === undefined) {
    return { kind: "tls_failure", reason: "the server certificate cannot be read (Deno TLS)" };
  }
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(peer.raw);
  } catch (e) {
    return { kind: "tls_failure", reason: `the server certificate cannot be parsed: ${e}` };
  }
  if (!meshIssuers(cert).some((a) => leaf.checkIssued(a) && leaf.verify(a.publicKey))) {
    return { kind: "tls_failure", reason: "the server certificate is not issued by the mesh roots" };
  }
  const sans = uriSans(peer.subjectaltname);
  const ok = identity === "" ? sans.some((u) => u.startsWith("spiffe://")) : sans.includes(identity);
  if (ok) return null;
  return {
    kind: "identity_mismatch",
    reason: `expected ${identity || "a SPIFFE ID"}, server presented ${sans.join(", ") || "no URI SAN"}`,
  };
}

/**
 * Connects with mutual TLS on `Deno.connectTls` and checks the server as {@link mtlsDialer} does.
 * @throws {DialError} connect_failure, tls_failure, identity_mismatch or timeout
 */
export async function denoMtlsConnect(target: MtlsTarget): Promise<SocketIo> {
  const { host, port, cert, identity, timeoutMs, alpn } = target;
  let conn: Deno.TlsConn | undefined;
  let connected = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new DialError("timeout", `TLS connect to ${host}:${port} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  const connecting = Deno.connectTls({
    hostname: host,
    port,
    caCerts: [cert.rootsPem],
    cert: cert.certChainPem,
    key: cert.privateKeyPem,
    alpnProtocols: [...alpn],
    unsafelyDisableHostnameVerification: true,
  });
  try {
    try {
      conn = await Promise.race([connecting, timeout]);
      connected = true;
    } catch (e) {
      if (e instanceof DialError) throw e;
      throw new DialError("connect_failure", `connect to ${host}:${port} failed: ${errorText(e)}`);
    }
    try {
      await Promise.race([conn.handshake(), timeout]);
    } catch (e) {
      if (e instanceof DialError) throw e;
      throw new DialError("tls_failure", `TLS handshake with ${host}:${port} failed: ${errorText(e)}`);
    }
    const read = peerCertificateReader(conn);
    const problem = peerProblem(read === null ? null : read(conn), cert, identity);
    if (problem !== null) {
      throw new DialError(
        problem.kind,
        problem.kind === "identity_mismatch"
          ? `upstream identity mismatch at ${host}:${port}: ${problem.reason}`
          : `TLS handshake with ${host}:${port} failed: ${problem.reason}`,
      );
    }
    const io = new DenoConnIo(conn);
    conn = undefined;
    return io;
  } finally {
    clearTimeout(timer);
    if (conn !== undefined) conn.close();
    // A connection that completes after the timeout is closed, not leaked.
    if (timedOut && !connected) connecting.then((c) => c.close(), () => {});
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
