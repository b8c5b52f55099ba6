/**
 * The workload certificate, as Istio's pilot-agent SecretManager keeps it: an ECDSA P-256 key
 * generated here with WebCrypto (a new one for every CSR, never sent anywhere), a PKCS #10 CSR
 * carrying the SPIFFE ID as its URI SAN, `CreateCertificate` on meshd's secure port, authenticated
 * by the bootstrap token (read from a file, for the first certificate or when the certificate has
 * expired) or by the current certificate over mutual TLS (renewal).
 *
 * Rotation: at `rotationRatio` (half) of the lifetime, measured from when the certificate was
 * received to its NotAfter (Istio's rule; meshd backdates NotBefore by 2 minutes, which would
 * otherwise make a short certificate look half-spent on arrival). A failed request is retried with
 * exponential backoff and jitter; the old certificate stays in force until its NotAfter, and is
 * then withdrawn (listeners get `undefined`) while the retries go on.
 *
 * @module
 */
import type * as Pkix from "./pkix.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";
import { type CsrClient, type CsrCredentials, CsrError, GrpcCsrClient } from "./csr_client.ts";
import { meshdRoots } from "../../shared/internal/tls/meshd_roots.ts";
import { formatSpiffeId, parseSpiffeId } from "../../shared/identity/spiffe.ts";

/** Where the agent logs. */
export interface AgentLogger {
  debug?(message: string): void;
  info(message: string): void;
  warn(message: string): void;
}

const SILENT: AgentLogger = { info() {}, warn() {} };

/** Options of {@link CertificateManager}. */
export interface CertificateManagerOptions {
  /** meshd's secure address (--secureGRPCAddr), `host:port`; used unless `client` is given. */
  address?: string;
  /** PEM roots that meshd's serving certificate chains to (the mesh root-cert.pem). */
  rootsPem?: string;
  /** The name meshd's serving certificate must carry; default the dialled host. */
  serverName?: string;
  /** The bootstrap token file (istio-token); read again for every token-authenticated request. */
  tokenFile?: string;
  /** Trust domain of the SPIFFE ID in the CSR; default cluster.local. */
  trustDomain?: string;
  /** Namespace and service account; default: the token's `sub` (system:serviceaccount:<ns>:<sa>). */
  namespace?: string;
  serviceAccount?: string;
  /** Requested lifetime (validity_duration), s; 0 or absent: meshd's DEFAULT_WORKLOAD_CERT_TTL. */
  ttlSeconds?: number;
  /** Fraction of the lifetime after which to renew; default 0.5. */
  rotationRatio?: number;
  /** Retry delays after a failed request; default 100 ms doubling to 30 s, ±50 % jitter. */
  backoff?: BackoffOptions;
  /** Sends the CSRs; default a {@link GrpcCsrClient} to `address`. */
  client?: CsrClient;
  logger?: AgentLogger;
}

/** What the manager is doing, for status pages and tests. */
export interface CertificateStatus {
  /** Requests sent since start, successful or not. */
  requests: number;
  /** Failures since the last success. */
  failures: number;
  lastError?: string;
  /** When the current certificate will be renewed, ms since the epoch. */
  rotateAt?: number;
  /** When a failed request will be retried, ms since the epoch. */
  retryAt?: number;
}

/** Listener of certificate changes; `undefined` when the certificate expired without renewal. */
export type CertificateListener = (certificate: CertificateInfo | undefined) => void;

/** Largest delay setTimeout accepts. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer that may be longer than setTimeout allows (a 90-day certificate rotates after 45 days). */
function longTimeout(fn: () => void, at: number): () => void {
  let id: ReturnType<typeof setTimeout>;
  const arm = () => {
    const left = at - Date.now();
    id = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
  };
  arm();
  return () => clearTimeout(id);
}

/** PEM text of DER bytes, 64 characters per line. */
export function toPem(der: ArrayBuffer | Uint8Array, label: string): string {
  const bytes = der instanceof Uint8Array ? der : new Uint8Array(der);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  const lines = btoa(bin).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/** The PEM blocks of `text`, each with a final newline. */
function pemBlocks(text: string): string[] {
  return (text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map((b) =>
    b + "\n"
  );
}

/**
 * The namespace and service account of a bootstrap token's `sub`, read without verifying (meshd
 * verifies it; the agent only needs to know which SPIFFE ID to put in its CSR).
 */
export function tokenServiceAccount(
  token: string,
): { namespace: string; serviceAccount: string } | undefined {
  const part = token.split(".")[1];
  if (!part) return undefined;
  try {
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "="));
    const sub = JSON.parse(json).sub;
    const m = typeof sub === "string" ? /^system:serviceaccount:([^:]+):([^:]+)$/.exec(sub) : null;
    return m ? { namespace: m[1], serviceAccount: m[2] } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The X.509 code (`pkix.ts`: the ASN.1 schemas and node:crypto's parser), loaded with the first
 * CSR: a proxy on plain-text ADS never needs it (README.md, "Memory").
 */
let pkixModule: Promise<typeof Pkix> | undefined;
const loadPkix = (): Promise<typeof Pkix> => (pkixModule ??= import("./pkix.ts"));

/** A new ECDSA P-256 key pair and a CSR for `spiffeId`. */
export async function createCsr(spiffeId: string): Promise<{ csrPem: string; keys: CryptoKeyPair }> {
  const pkix = await loadPkix();
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  return { csrPem: toPem(await pkix.csrDer(spiffeId, keys), "CERTIFICATE REQUEST"), keys };
}

/**
 * Checks an issued chain against the key it was requested for and turns it into a
 * {@link CertificateInfo}: the leaf carries our public key and exactly one SPIFFE ID (the expected
 * one, when given), every certificate is signed by the next, the last element is the trust bundle.
 *
 * @throws Error saying what is wrong
 */
export async function certificateInfoOf(
  chain: string[],
  keys: CryptoKeyPair,
  expectedSpiffeId?: string,
): Promise<CertificateInfo> {
  const pkix = await loadPkix();
  if (chain.length < 2) {
    throw new Error(`the CA answered ${chain.length} certificate(s); leaf and root expected`);
  }
  const certs = chain.slice(0, -1).map((pem, i) => {
    const blocks = pemBlocks(pem);
    if (blocks.length !== 1) throw new Error(`chain element ${i + 1} is not one PEM certificate`);
    return { pem: blocks[0], cert: pkix.parseCertificate(blocks[0]) };
  });
  const roots = pemBlocks(chain[chain.length - 1]).map((pem) => ({
    pem,
    cert: pkix.parseCertificate(pem),
  }));
  if (roots.length === 0) throw new Error("the trust bundle (last chain element) holds no certificate");
  const leaf = certs[0].cert;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  if (!equalBytes(leaf.spki, spki)) {
    throw new Error("the issued certificate does not carry the key of the CSR");
  }
  if (leaf.uris.length !== 1) {
    throw new Error(`the issued certificate has ${leaf.uris.length} URI SANs; one SPIFFE ID expected`);
  }
  const spiffeId = formatSpiffeId(parseSpiffeId(leaf.uris[0]));
  if (expectedSpiffeId !== undefined && spiffeId !== expectedSpiffeId) {
    throw new Error(`the CA issued ${spiffeId}, not the requested ${expectedSpiffeId}`);
  }
  for (let i = 0; i < certs.length; i++) {
    const issuers = i + 1 < certs.length ? [certs[i + 1].cert] : roots.map((r) => r.cert);
    if (!issuers.some((issuer) => certs[i].cert.signedBy(issuer))) {
      throw new Error(`chain certificate ${i + 1} is not signed by the next one`);
    }
  }
  const privateKeyPem = toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  return Object.freeze({
    certChainPem: certs.map((c) => c.pem).join(""),
    privateKeyPem,
    rootsPem: roots.map((r) => r.pem).join(""),
    spiffeId,
    notBefore: leaf.notBefore,
    notAfter: leaf.notAfter,
  });
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Obtains, rotates and withdraws the workload certificate. */
export class CertificateManager {
  readonly #options: CertificateManagerOptions;
  readonly #client: CsrClient;
  readonly #backoff: Backoff;
  readonly #log: AgentLogger;
  readonly #listeners = new Set<CertificateListener>();
  readonly #waiters: ((c: CertificateInfo) => void)[] = [];
  #current: CertificateInfo | undefined;
  #running = false;
  #inFlight = false;
  #cancelRotation: (() => void) | undefined;
  #cancelExpiry: (() => void) | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #status: CertificateStatus = { requests: 0, failures: 0 };

  /** @param options meshd's address and roots, the token file, the identity and timings */
  constructor(options: CertificateManagerOptions) {
    this.#options = options;
    const ratio = options.rotationRatio ?? 0.5;
    if (!(ratio > 0 && ratio < 1)) throw new RangeError("rotationRatio must be between 0 and 1");
    if (options.client) this.#client = options.client;
    else {
      if (!options.address || !options.rootsPem) {
        throw new Error("the certificate manager needs meshd's secure address and the roots to verify it");
      }
      const configured = options.rootsPem;
      this.#client = new GrpcCsrClient({
        address: options.address,
        // The bundle of the certificate in force too: it holds meshd's rotated root.
        rootsPem: () => meshdRoots(configured, this.#current?.rootsPem),
        serverName: options.serverName,
      });
    }
    this.#backoff = new Backoff(options.backoff);
    this.#log = options.logger ?? SILENT;
  }

  /** The certificate in force, if any. */
  get certificate(): CertificateInfo | undefined {
    return this.#current;
  }

  /** A copy of the request counters and timers. */
  status(): CertificateStatus {
    return { ...this.#status };
  }

  /** Calls `listener` on every new certificate, and with `undefined` when one expires unrenewed. */
  onChange(listener: CertificateListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the certificate in force, or the first one obtained. */
  firstCertificate(): Promise<CertificateInfo> {
    if (this.#current) return Promise.resolve(this.#current);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Starts: requests the first certificate now. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#attempt();
  }

  /** Renews now (for example after the mesh root changed), unless a request is already under way. */
  renewNow(): void {
    if (!this.#running || this.#inFlight) return;
    clearTimeout(this.#retryTimer);
    this.#cancelRotation?.();
    void this.#attempt();
  }

  /** Stops every timer; the certificate stays readable. Idempotent. */
  stop(): void {
    this.#running = false;
    clearTimeout(this.#retryTimer);
    this.#cancelRotation?.();
    this.#cancelExpiry?.();
  }

  async #attempt(): Promise<void> {
    if (!this.#running || this.#inFlight) return;
    this.#inFlight = true;
    this.#status.retryAt = undefined;
    this.#status.requests++;
    try {
      const cert = await this.#request();
      if (!this.#running) return;
      this.#backoff.reset();
      this.#status.failures = 0;
      this.#status.lastError = undefined;
      this.#install(cert);
    } catch (e) {
      if (!this.#running) return;
      const message = e instanceof CsrError
        ? `CreateCertificate failed (code ${e.code}): ${e.message}`
        : (e as Error).message;
      this.#status.failures++;
      this.#status.lastError = message;
      const delay = this.#backoff.next();
      this.#status.retryAt = Date.now() + delay;
      this.#log.warn(`workload certificate: ${message}; retrying in ${delay} ms`);
      this.#retryTimer = setTimeout(() => void this.#attempt(), delay);
    } finally {
      this.#inFlight = false;
    }
  }

  async #request(): Promise<CertificateInfo> {
    const current = this.#current;
    let credentials: CsrCredentials;
    let spiffeId: string;
    if (current && Date.now() < current.notAfter) {
      credentials = {
        clientCertificate: { certChainPem: current.certChainPem, privateKeyPem: current.privateKeyPem },
      };
      spiffeId = current.spiffeId;
    } else {
      const token = await this.#token();
      credentials = { token };
      spiffeId = this.#spiffeIdFor(token);
    }
    const { csrPem, keys } = await createCsr(spiffeId);
    const chain = await this.#client.createCertificate(
      { csr: csrPem, validityDuration: Math.max(0, Math.floor(this.#options.ttlSeconds ?? 0)), metadata: {} },
      credentials,
    );
    return await certificateInfoOf(chain, keys, spiffeId);
  }

  async #token(): Promise<string> {
    const file = this.#options.tokenFile;
    if (!file) throw new Error("no valid certificate and no bootstrap token file to get one");
    let token: string;
    try {
      token = (await Deno.readTextFile(file)).trim();
    } catch (e) {
      throw new Error(`bootstrap token ${file}: ${(e as Error).message}`);
    }
    if (token === "") throw new Error(`bootstrap token ${file} is empty`);
    return token;
  }

  #spiffeIdFor(token: string): string {
    const o = this.#options;
    const fromToken = tokenServiceAccount(token);
    const namespace = o.namespace ?? fromToken?.namespace;
    const serviceAccount = o.serviceAccount ?? fromToken?.serviceAccount;
    if (!namespace || !serviceAccount) {
      throw new Error(
        "the workload identity is unknown: give namespace and serviceAccount, or a token whose sub is system:serviceaccount:<ns>:<sa>",
      );
    }
    return formatSpiffeId({ trustDomain: o.trustDomain ?? "cluster.local", namespace, serviceAccount });
  }

  #install(cert: CertificateInfo): void {
    const receivedAt = Date.now();
    this.#current = cert;
    this.#cancelRotation?.();
    this.#cancelExpiry?.();
    const ratio = this.#options.rotationRatio ?? 0.5;
    const rotateAt = receivedAt + Math.max(0, cert.notAfter - receivedAt) * ratio;
    this.#status.rotateAt = rotateAt;
    this.#cancelRotation = longTimeout(() => void this.#attempt(), rotateAt);
    this.#cancelExpiry = longTimeout(() => this.#expire(cert), cert.notAfter);
    this.#log.info(
      `workload certificate ${cert.spiffeId} valid until ${
        new Date(cert.notAfter).toISOString()
      }, renewing at ${new Date(rotateAt).toISOString()}`,
    );
    this.#waiters.splice(0).forEach((w) => w(cert));
    this.#emit(cert);
  }

  #expire(cert: CertificateInfo): void {
    if (this.#current !== cert) return;
    this.#current = undefined;
    this.#status.rotateAt = undefined;
    this.#log.warn(`workload certificate ${cert.spiffeId} expired before it could be renewed`);
    this.#emit(undefined);
  }

  #emit(cert: CertificateInfo | undefined): void {
    for (const l of this.#listeners) {
      try {
        l(cert);
      } catch (e) {
        this.#log.warn(`certificate listener failed: ${(e as Error).message}`);
      }
    }
  }
}
