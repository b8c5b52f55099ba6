/**
 * The server side of inbound mutual TLS: a node:tls server (never listening itself; sockets are
 * handed to it after sniffing) for the workload certificate of the current snapshot, requiring a
 * client certificate that chains to the mesh roots. When the snapshot's certificate changes, a new
 * server is built for new connections; connections accepted by the old one keep it until they end,
 * so a rotation drops nothing.
 *
 * The identity check after the handshake (a SPIFFE ID of the mesh's trust domain in a URI SAN, as
 * Istio's `match_typed_subject_alt_names` with the `spiffe://<trust domain>/` prefix) is
 * {@link checkPeer}.
 *
 * @module
 */
import tls from "node:tls";
import { tryParseSpiffeId } from "../../shared/identity/mod.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";
import { certificateFields, certificateHash, formatXfccElement } from "./xfcc.ts";

/** The TLS server of one workload certificate. */
export interface ServingContext {
  readonly certificate: CertificateInfo;
  readonly server: tls.Server;
  /** URI SANs of the proxy's certificate: XFCC `By`. */
  readonly by: string[];
}

/** Builds and caches the {@link ServingContext} of the current certificate. */
export class InboundTls {
  #current: ServingContext | null = null;
  /** A certificate that failed to load, not retried until the snapshot changes it. */
  #failed: CertificateInfo | null = null;
  readonly #onSecure: (socket: tls.TLSSocket, ctx: ServingContext) => void;
  readonly #onError: (err: Error, socket: tls.TLSSocket) => void;
  readonly #onBuildError: (err: Error) => void;
  readonly #alpn: readonly string[] | undefined;

  /** @param alpnProtocols the ALPN protocols the server selects from (HTTP/2 ports: ../tls/mesh_alpn.ts's `INBOUND_H2_SERVER_ALPN`); none by default */
  constructor(
    onSecure: (socket: tls.TLSSocket, ctx: ServingContext) => void,
    onError: (err: Error, socket: tls.TLSSocket) => void,
    onBuildError: (err: Error) => void,
    alpnProtocols?: readonly string[],
  ) {
    this.#onSecure = onSecure;
    this.#onError = onError;
    this.#onBuildError = onBuildError;
    this.#alpn = alpnProtocols;
  }

  /** Times a server was built (tests, diagnostics). */
  builds = 0;

  /**
   * The context for `cert`: the cached one when the certificate is unchanged, else a new one. Null
   * without a certificate. A certificate that cannot be loaded is reported once and the previous
   * context, if any, stays in use.
   */
  contextFor(cert: CertificateInfo | undefined): ServingContext | null {
    if (cert === undefined) return null;
    const cur = this.#current;
    if (cur !== null && (cur.certificate === cert || sameCertificate(cur.certificate, cert))) return cur;
    if (cert === this.#failed) return cur;
    try {
      const ctx = this.#build(cert);
      this.#current = ctx;
      this.#failed = null;
      return ctx;
    } catch (e) {
      this.#failed = cert;
      this.#onBuildError(e instanceof Error ? e : new Error(String(e)));
      return cur;
    }
  }

  #build(cert: CertificateInfo): ServingContext {
    const leaf = firstPemDer(cert.certChainPem);
    if (leaf === null) throw new Error("the certificate chain has no certificate");
    const by = certificateFields(leaf).uris;
    const server = tls.createServer({
      key: cert.privateKeyPem,
      cert: cert.certChainPem,
      ca: cert.rootsPem,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: "TLSv1.2",
      ...(this.#alpn === undefined ? {} : { ALPNProtocols: [...this.#alpn] }),
    });
    const ctx: ServingContext = { certificate: cert, server, by };
    server.on("secureConnection", (socket: tls.TLSSocket) => this.#onSecure(socket, ctx));
    server.on("tlsClientError", (err: Error, socket: tls.TLSSocket) => this.#onError(err, socket));
    this.builds++;
    return ctx;
  }
}

function sameCertificate(a: CertificateInfo, b: CertificateInfo): boolean {
  return a.certChainPem === b.certChainPem && a.privateKeyPem === b.privateKeyPem &&
    a.rootsPem === b.rootsPem;
}

/** The DER of the first CERTIFICATE block of a PEM text, or null. */
export function firstPemDer(pem: string): Uint8Array | null {
  const m = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(pem);
  if (m === null) return null;
  const bin = atob(m[1].replace(/\s+/g, ""));
  const der = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) der[i] = bin.charCodeAt(i);
  return der;
}

/** The outcome of {@link checkPeer}. */
export type PeerCheck =
  | { ok: true; spiffeId: string; xfccElement: string }
  | { ok: false; reason: string };

/**
 * Accepts a verified client certificate when one of its URI SANs is a SPIFFE ID of a trusted trust
 * domain, and makes its XFCC element.
 */
export function checkPeer(der: Uint8Array, trustDomains: readonly string[], by: string[]): PeerCheck {
  let fields;
  try {
    fields = certificateFields(der);
  } catch (e) {
    return { ok: false, reason: `unreadable client certificate: ${e instanceof Error ? e.message : e}` };
  }
  let spiffeId = "";
  let foreign = "";
  for (const uri of fields.uris) {
    const id = tryParseSpiffeId(uri);
    if (id === undefined) continue;
    if (trustDomains.includes(id.trustDomain)) {
      spiffeId = uri;
      break;
    }
    foreign ||= uri;
  }
  if (spiffeId === "") {
    return {
      ok: false,
      reason: foreign !== ""
        ? `client identity ${foreign} is not in trust domain ${trustDomains.join(", ") || "(none known)"}`
        : "client certificate has no SPIFFE ID",
    };
  }
  const xfccElement = formatXfccElement({
    by,
    hash: certificateHash(der),
    subject: fields.subject,
    uris: fields.uris,
    dnsNames: fields.dnsNames,
  });
  return { ok: true, spiffeId, xfccElement };
}
