/**
 * TLS termination of a gateway's HTTPS listener (Istio's "Secure Gateways"): one node:tls server per
 * HTTPS route configuration, built from the snapshot's credentials (mesh.v1.TlsCredential) and the
 * route configuration's ServerTls: SIMPLE presents the server certificate; MUTUAL also requires a
 * client certificate that chains to the credential's CA (and carries one of `subjectAltNames`, when
 * set). The route configuration of a connection is chosen by the ClientHello's SNI before any
 * handshake (shared's {@link selectBySni}), so that every server keeps its own certificate, CA and TLS
 * versions. When a credential or setting changes, a new server is built for new connections; those
 * already accepted keep theirs, so a certificate rotation drops nothing and the listener stays bound.
 *
 * node:tls is used because Deno's native TLS cannot request client certificates (platform.md).
 *
 * @module
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import tls from "node:tls";
import { selectBySni } from "../../shared/routing/mod.ts";
import type { RouteConfiguration, RuntimeSnapshot, TlsCredentialInfo } from "../runtime/snapshot.ts";

/** The TLS server of one HTTPS route configuration at one version of its credentials. */
export interface GatewayTlsContext {
  /** The route configuration it serves. */
  readonly routeName: string;
  readonly server: tls.Server;
  /** What the server was built from (certificates and settings, never logged). */
  readonly fingerprint: string;
  /** MUTUAL: a client certificate was required and verified against the CA. */
  readonly mutual: boolean;
  /** MUTUAL with subjectAltNames: the SANs a client certificate must carry one of. */
  readonly subjectAltNames: readonly string[];
}

/** The outcome of {@link GatewayTls.select}: a TLS server, a PASSTHROUGH server's routes, or why none. */
export type GatewayTlsSelection =
  | { ok: true; context: GatewayTlsContext }
  | { ok: true; passthrough: RouteConfiguration }
  | { ok: false; reason: string };

/** Callbacks of {@link GatewayTls}. */
export interface GatewayTlsHandlers {
  /** A completed handshake. */
  onSecure(socket: tls.TLSSocket, context: GatewayTlsContext): void;
  /** A failed handshake (no or untrusted client certificate, no common version, ...). */
  onError(err: Error, socket: tls.TLSSocket): void;
  /** A credential that does not load, reported once per version (the last good one stays in use). */
  onBuildError?(routeName: string, reason: string): void;
}

// Deno's TLS (rustls) has no TLS 1.0 or 1.1: those minimums mean TLS 1.2.
const VERSIONS: Record<string, tls.SecureVersion> = {
  TLSV1_0: "TLSv1.2",
  TLSV1_1: "TLSv1.2",
  TLSV1_2: "TLSv1.2",
  TLSV1_3: "TLSv1.3",
};

/** Builds and caches the TLS servers of a gateway listener's HTTPS route configurations. */
export class GatewayTls {
  readonly #handlers: GatewayTlsHandlers;
  readonly #current = new Map<string, GatewayTlsContext>();
  /** The fingerprint that last failed to load, per route configuration: reported once. */
  readonly #failed = new Map<string, string>();
  /** Times a server was built (tests, diagnostics). */
  builds = 0;

  constructor(handlers: GatewayTlsHandlers) {
    this.#handlers = handlers;
  }

  /**
   * The TLS server for a client's SNI among the listener's route configurations (or the PASSTHROUGH
   * server, whose connections are not terminated), or why there is none (no matching host, a
   * credential not received yet, or one that does not load).
   */
  select(
    snapshot: RuntimeSnapshot,
    routeNames: readonly string[],
    sni: string | undefined,
  ): GatewayTlsSelection {
    const configs = routeNames.map((n) => snapshot.routes[n]).filter((rc) => rc?.tls !== undefined);
    const rc = selectBySni(configs, sni);
    if (rc === undefined) {
      return {
        ok: false,
        reason: `no HTTPS server for SNI ${sni === undefined ? "(none)" : JSON.stringify(sni)}`,
      };
    }
    const tlsSettings = rc.tls!;
    if (tlsSettings.mode === "PASSTHROUGH") return { ok: true, passthrough: rc };
    const cert = snapshot.credentials[tlsSettings.credentialName];
    if (cert === undefined || cert.certificateChain === "") {
      return { ok: false, reason: `${rc.name}: credential ${tlsSettings.credentialName} not received` };
    }
    let ca: TlsCredentialInfo | undefined;
    if (tlsSettings.mode === "MUTUAL") {
      ca = snapshot.credentials[tlsSettings.caCredentialName];
      if (ca === undefined || ca.caCertificates === "") {
        return { ok: false, reason: `${rc.name}: client CA ${tlsSettings.caCredentialName} not received` };
      }
    }
    const fingerprint = [
      tlsSettings.mode,
      tlsSettings.minProtocolVersion,
      tlsSettings.maxProtocolVersion,
      cert.certificateChain,
      cert.privateKey,
      ca?.caCertificates ?? "",
    ].join("\u0000");
    const cur = this.#current.get(rc.name);
    if (cur !== undefined && cur.fingerprint === fingerprint) return { ok: true, context: cur };
    try {
      const context = this.#build(rc, cert, ca, fingerprint);
      this.#current.set(rc.name, context);
      return { ok: true, context };
    } catch (e) {
      const reason = `${rc.name}: credential does not load: ${(e as Error).message}`;
      if (this.#failed.get(rc.name) !== fingerprint) {
        this.#failed.set(rc.name, fingerprint);
        this.#handlers.onBuildError?.(rc.name, reason);
      }
      // Keep serving with the previous credential, if any, rather than refusing every client.
      if (cur !== undefined) return { ok: true, context: cur };
      return { ok: false, reason };
    }
  }

  #build(
    rc: RouteConfiguration,
    cert: TlsCredentialInfo,
    ca: TlsCredentialInfo | undefined,
    fingerprint: string,
  ): GatewayTlsContext {
    const t = rc.tls!;
    // node:tls accepts a bad key here and fails every handshake later: check it now instead.
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(cert.certificateChain);
    } catch {
      throw new Error("the certificate chain is not a PEM certificate");
    }
    let key: ReturnType<typeof createPrivateKey>;
    try {
      key = createPrivateKey(cert.privateKey);
    } catch {
      throw new Error("the private key is not a PEM private key");
    }
    if (!leaf.checkPrivateKey(key)) throw new Error("the private key does not match the certificate");
    const server = tls.createServer({
      key: cert.privateKey,
      cert: cert.certificateChain,
      ...(ca ? { ca: ca.caCertificates, requestCert: true, rejectUnauthorized: true } : {}),
      // Envoy's server defaults: TLS 1.2 to 1.3.
      minVersion: VERSIONS[t.minProtocolVersion] ?? "TLSv1.2",
      maxVersion: VERSIONS[t.maxProtocolVersion] ?? "TLSv1.3",
      // As Envoy's HTTPS gateway listeners (Istio sets h2 and http/1.1 there): h2 goes to ./http2.ts.
      ALPNProtocols: ["h2", "http/1.1"],
    });
    const context: GatewayTlsContext = {
      routeName: rc.name,
      server,
      fingerprint,
      mutual: ca !== undefined,
      subjectAltNames: t.mode === "MUTUAL" ? t.subjectAltNames : [],
    };
    server.on("secureConnection", (socket: tls.TLSSocket) => this.#handlers.onSecure(socket, context));
    server.on("tlsClientError", (err: Error, socket: tls.TLSSocket) => this.#handlers.onError(err, socket));
    this.builds++;
    return context;
  }
}

/** The SAN values of a peer certificate (`DNS:a, URI:b` -> `["a", "b"]`, also `URI:`-typed). */
export function peerSans(subjectaltname: string | undefined): { uris: string[]; all: string[] } {
  const uris: string[] = [];
  const all: string[] = [];
  for (const part of (subjectaltname ?? "").split(/,\s*/)) {
    const colon = part.indexOf(":");
    if (colon < 0) continue;
    const value = part.slice(colon + 1);
    all.push(value);
    if (part.slice(0, colon) === "URI") uris.push(value);
  }
  return { uris, all };
}
