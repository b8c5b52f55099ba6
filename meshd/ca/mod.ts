/**
 * meshd's certificate authority (issue #3, part 5): a facade over the modules of this folder.
 *
 * ```ts
 * const ca = new CertificateAuthority();
 * await ca.start({ rootCaDir, trustDomain, selfSignedRsaKeySize, selfSignedTtlMs, defaultTtlMs, maxTtlMs, tokenAudiences });
 * ca.register(grpcServer); // mesh.v1.CertificateService on --secureGRPCAddr
 * await ca.stop();
 * ```
 *
 * `start` creates the self-signed root when ROOT_CA_DIR holds none (or uses the plugged-in
 * cacerts), starts the signer Worker, which loads and validates the CA and is from then on the only
 * holder of the CA key, and opens (or creates) the bootstrap-token key. See README.md.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import * as x509 from "@peculiar/x509";
import { join, resolve } from "node:path";
import { formatSpiffeId } from "../../shared/identity/mod.ts";
import { Authenticator, type AuthResult, type Credentials } from "./authenticate.ts";
import {
  type BootstrapToken,
  BootstrapTokenIssuer,
  DEFAULT_TOKEN_ISSUER,
} from "../../shared/internal/ca/bootstrap_tokens.ts";
import { type CaServiceHooks, effectiveTtlSeconds, registerCertificateService } from "./ca_service.ts";
import { toPem } from "../../shared/internal/ca/pem.ts";
import { type CaBundle, ensureRootCa, SELF_SIGNED_CERT_FILE } from "./root_ca.ts";
import { writeSelfSignedRoots } from "./root_renewal.ts";
import { shouldRotateRoot } from "./root_rotator.ts";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";
import { meshServerCredentials, StaticCertificateProvider } from "./server_credentials.ts";
import { type ProbeResult, type SandboxProbe, SignerClient } from "./signer_client.ts";
import { bootstrapTokenHandler } from "./token_endpoint.ts";

export type { AuthResult, CallerIdentity, Credentials } from "./authenticate.ts";
export type { BootstrapToken } from "../../shared/internal/ca/bootstrap_tokens.ts";
export {
  BOOTSTRAP_TOKEN_TYPE,
  BootstrapTokenIssuer,
  DEFAULT_TOKEN_DURATION_SECONDS,
  TOKEN_KEY_FILE,
} from "../../shared/internal/ca/bootstrap_tokens.ts";
export {
  type CaServiceHooks,
  type CertificateProtocol,
  certificateProtocol,
  effectiveTtlSeconds,
  IMPERSONATED_IDENTITY_KEY,
} from "./ca_service.ts";
export { SignError, type SignErrorKind } from "./leaf_cert.ts";
export {
  type CaBundle,
  CACERTS_FILES,
  CLOCK_SKEW_GRACE_MS,
  type RootCaSource,
  SELF_SIGNED_CERT_FILE,
  SELF_SIGNED_KEY_FILE,
} from "./root_ca.ts";
export { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
export { MAX_PREVIOUS_ROOTS } from "./root_renewal.ts";
export {
  RootCertRotator,
  type RootRotationSettings,
  rootRotationWaitMs,
  rotatorStartDelayMs,
  shouldRotateRoot,
} from "./root_rotator.ts";
export { type ServingMaterial, StaticCertificateProvider } from "./server_credentials.ts";
export type { ProbeResult, SandboxProbe } from "./signer_client.ts";
export { BOOTSTRAP_TOKEN_PATH, isLoopback } from "./token_endpoint.ts";

/** The default of TOKEN_AUDIENCES. */
export const DEFAULT_TOKEN_AUDIENCE = "mesh-ca";

/** Options of {@link CertificateAuthority.start}, from meshd's environment. */
export interface CertificateAuthorityOptions {
  /** ROOT_CA_DIR. */
  rootCaDir: string;
  /** The mesh's trust domain (mesh config `trustDomain`, default cluster.local). */
  trustDomain: string;
  /** CA_SELF_SIGNED_CA_RSA_KEY_SIZE. */
  selfSignedRsaKeySize: number;
  /** CA_SELF_SIGNED_CA_CERT_TTL, ms. */
  selfSignedTtlMs: number;
  /** DEFAULT_WORKLOAD_CERT_TTL, ms. */
  defaultTtlMs: number;
  /** MAX_WORKLOAD_CERT_TTL, ms. */
  maxTtlMs: number;
  /** TOKEN_AUDIENCES: a comma-separated string or a list; empty means `mesh-ca`. */
  tokenAudiences: string | string[];
  /** TOKEN_ISSUER: the `iss` of bootstrap tokens; default `meshd`. */
  tokenIssuer?: string;
  /** Longest bootstrap token lifetime, seconds; default 24 h. */
  maxTokenDurationSeconds?: number;
  /** Counters for the gRPC service (also settable per {@link CertificateAuthority.register}). */
  hooks?: CaServiceHooks;
  /**
   * Where the signer reads the CA from when not ROOT_CA_DIR itself: the copy of the Kubernetes
   * Secret (kube_ca.ts). ROOT_CA_DIR still holds the bootstrap-token key.
   */
  caDir?: string;
  /** Checks bearer tokens that are not bootstrap tokens (TokenReview; token_review.ts). */
  reviewToken?: (token: string) => Promise<AuthResult>;
  /** Called with `self-signed-ca-cert.pem`'s new text after a rotation wrote it (to update the Secret). */
  onRootsWritten?: (rootsPem: string) => Promise<void>;
  /** At each root check: the shared Secret's roots when they differ from `self-signed-ca-cert.pem`'s. */
  pullRoots?: () => Promise<string | undefined>;
}

/** A serving certificate for one of meshd's TLS listeners, with its freshly generated key. */
export interface ServingCertificate {
  /** Leaf first, then intermediates and the root bundle. */
  certChainPem: string;
  /** PKCS #8 PEM of the ECDSA P-256 key. */
  privateKeyPem: string;
  /** When the certificate expires: renew before. */
  notAfter: Date;
}

/** Parses TOKEN_AUDIENCES: comma-separated, blanks dropped, `mesh-ca` when nothing is left. */
export function parseTokenAudiences(value: string | string[]): string[] {
  const list = (Array.isArray(value) ? value : value.split(",")).map((s) => s.trim()).filter((s) => s !== "");
  return list.length > 0 ? [...new Set(list)] : [DEFAULT_TOKEN_AUDIENCE];
}

/** What {@link CertificateAuthority.checkRoot} did. */
export type RootCheckOutcome =
  | "rotated" // a new root from the same key; the old one stays in the bundle until it expires
  | "pruned" // an earlier root expired and left the bundle
  | "unchanged"
  | "plugged-in" // plugged-in roots are the operator's to rotate
  | "followed"; // the roots of the shared Secret changed (another replica rotated): taken over

/** Whether any certificate of the PEM bundle has expired at `now`. */
function holdsExpired(pem: string, now: Date): boolean {
  return pemCertificates(pem).some((b) =>
    new x509.X509Certificate(b.der as Uint8Array<ArrayBuffer>).notAfter.getTime() <= now.getTime()
  );
}

interface Running {
  options: CertificateAuthorityOptions;
  signer: SignerClient;
  tokens: BootstrapTokenIssuer;
  authenticator: Authenticator;
  listeners: Set<(bundle: CaBundle) => void>;
  audiences: string[];
  created: boolean;
  warnings: string[];
}

/** meshd's CA. */
export class CertificateAuthority {
  #running: Running | undefined;

  /**
   * Starts the CA: the root (created or reused), the signer Worker, the token key.
   *
   * @returns the CA's public material
   * @throws {RootCaError} when ROOT_CA_DIR's material is missing parts or invalid
   */
  async start(options: CertificateAuthorityOptions): Promise<CaBundle> {
    if (this.#running) throw new Error("the CA is already started");
    if (!(options.defaultTtlMs > 0) || !(options.maxTtlMs > 0)) {
      throw new RangeError("DEFAULT_WORKLOAD_CERT_TTL and MAX_WORKLOAD_CERT_TTL must be positive");
    }
    formatSpiffeId({ trustDomain: options.trustDomain, namespace: "ns", serviceAccount: "sa" }); // checks the trust domain
    const rootCaDir = resolve(options.rootCaDir);
    const caDir = resolve(options.caDir ?? rootCaDir);
    const ensured = await ensureRootCa(caDir, {
      trustDomain: options.trustDomain,
      rsaKeySize: options.selfSignedRsaKeySize,
      ttlMs: options.selfSignedTtlMs,
    });
    const signer = await SignerClient.start(caDir);
    try {
      const audiences = parseTokenAudiences(options.tokenAudiences);
      const tokens = await BootstrapTokenIssuer.open(rootCaDir, {
        audiences,
        issuer: options.tokenIssuer,
        maxDurationSeconds: options.maxTokenDurationSeconds,
      });
      const authenticator = this.#authenticator(options, signer.bundle, tokens, audiences);
      this.#running = {
        options: { ...options, rootCaDir, caDir },
        signer,
        tokens,
        authenticator,
        listeners: new Set(),
        audiences,
        created: ensured.created,
        warnings: [...ensured.warnings, ...signer.bundle.warnings],
      };
      return signer.bundle;
    } catch (e) {
      signer.close();
      throw e;
    }
  }

  #authenticator(
    options: CertificateAuthorityOptions,
    bundle: CaBundle,
    tokens: BootstrapTokenIssuer,
    audiences: string[],
  ): Authenticator {
    return new Authenticator({
      trustDomain: options.trustDomain,
      tokenAudiences: audiences,
      tokenIssuer: options.tokenIssuer ?? DEFAULT_TOKEN_ISSUER,
      tokenVerificationKey: tokens.verificationKey,
      // Renewal is for certificates this CA issued: signed by its signing certificate.
      issuerCertificatesPem: [bundle.signingCertPem],
      reviewToken: options.reviewToken,
    });
  }

  /** Stops the signer Worker. Idempotent. */
  stop(): Promise<void> {
    this.#running?.signer.close();
    this.#running = undefined;
    return Promise.resolve();
  }

  #state(): Running {
    if (!this.#running) throw new Error("the CA is not started");
    return this.#running;
  }

  /** The CA's public material (roots, intermediates, expiry for the ca_server_* gauges). */
  get bundle(): CaBundle {
    return this.#state().signer.bundle;
  }

  /** Whether start created a new self-signed root (rather than reusing one or using plugged-in cacerts). */
  get createdRoot(): boolean {
    return this.#state().created;
  }

  /** Things to log at start: key files readable by others, symbolic links out of ROOT_CA_DIR. */
  get warnings(): string[] {
    return [...this.#state().warnings];
  }

  /** The roots workloads must trust (root-cert.pem or the self-signed root). */
  get trustBundlePem(): string {
    return this.bundle.rootCertPem;
  }

  /** The public JWK of the bootstrap-token key. */
  get tokenPublicJwk(): JsonWebKey {
    return this.#state().tokens.publicJwk as JsonWebKey;
  }

  /**
   * Signs a workload CSR for `identity` (already authenticated by the caller of this method).
   *
   * @param req.ttlMs requested lifetime; none or non-positive means DEFAULT_WORKLOAD_CERT_TTL; capped at MAX
   * @returns leaf first, root bundle last
   * @throws {SignError}
   */
  async sign(
    req: { csrPem: string; namespace: string; serviceAccount: string; ttlMs?: number },
  ): Promise<string[]> {
    const s = this.#state();
    const spiffeId = formatSpiffeId({
      trustDomain: s.options.trustDomain,
      namespace: req.namespace,
      serviceAccount: req.serviceAccount,
    });
    const ttlSeconds = effectiveTtlSeconds(
      (req.ttlMs ?? 0) / 1000,
      s.options.defaultTtlMs,
      s.options.maxTtlMs,
    );
    return await s.signer.sign({ csrPem: req.csrPem, spiffeId, ttlSeconds });
  }

  /** Verifies CSR credentials as the gRPC service does. */
  authenticate(cred: Credentials): Promise<AuthResult> {
    return this.#state().authenticator.authenticate(cred);
  }

  /** Mints a bootstrap token (see bootstrap_tokens.ts and README.md for who may call this). */
  issueBootstrapToken(
    req: { namespace: string; serviceAccount: string; durationSeconds?: number },
  ): Promise<BootstrapToken> {
    return this.#state().tokens.issue(req);
  }

  /** The fetch-style handler of POST /debug/bootstrapToken for the loopback debug interface. */
  bootstrapTokenHandler(
    onIssued?: (token: BootstrapToken, peer: string) => void,
  ): (request: Request, peerAddress: string) => Promise<Response> {
    return bootstrapTokenHandler({ issue: (r) => this.issueBootstrapToken(r), onIssued });
  }

  /** Adds mesh.v1.CertificateService to `server`; `hooks` default to the ones given to start. */
  register(server: Pick<grpc.Server, "addService">, hooks?: CaServiceHooks): void {
    const s = this.#state();
    registerCertificateService(server, {
      authenticate: (cred) => this.authenticate(cred),
      sign: (req) => s.signer.sign(req),
      defaultTtlMs: s.options.defaultTtlMs,
      maxTtlMs: s.options.maxTtlMs,
      trustDomain: s.options.trustDomain,
      hooks: hooks ?? s.options.hooks,
    });
  }

  /**
   * Issues a serving certificate for meshd's own TLS listeners (DNS names and IPs; no SPIFFE ID).
   * The key is generated here: it is meshd's own, not a workload's.
   */
  async issueServingCertificate(
    req: { dnsNames?: string[]; ipAddresses?: string[]; ttlMs?: number },
  ): Promise<ServingCertificate> {
    const s = this.#state();
    const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ]);
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({
      keys,
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    });
    const ttlSeconds = effectiveTtlSeconds(
      (req.ttlMs ?? 0) / 1000,
      s.options.defaultTtlMs,
      s.options.maxTtlMs,
    );
    const chain = await s.signer.sign({
      csrPem: csr.toString("pem"),
      dnsNames: req.dnsNames,
      ipAddresses: req.ipAddresses,
      ttlSeconds,
    });
    return {
      certChainPem: chain.slice(0, -1).join(""),
      privateKeyPem: toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
      notAfter: new x509.X509Certificate(chain[0]).notAfter,
    };
  }

  /**
   * Server credentials for --secureGRPCAddr: a serving certificate from this CA for `dnsNames`
   * (and `ipAddresses`), client certificates requested and verified against the trust bundle, not
   * required. Rotate by calling {@link issueServingCertificate} and `provider.update`.
   */
  async serverCredentials(
    req: { dnsNames?: string[]; ipAddresses?: string[]; ttlMs?: number },
  ): Promise<{ credentials: grpc.ServerCredentials; provider: StaticCertificateProvider; notAfter: Date }> {
    const cert = await this.issueServingCertificate(req);
    const provider = new StaticCertificateProvider({
      certChainPem: cert.certChainPem,
      privateKeyPem: cert.privateKeyPem,
      trustBundlePem: this.trustBundlePem,
    });
    return { credentials: meshServerCredentials(provider), provider, notAfter: cert.notAfter };
  }

  /** Calls `listener` with the new bundle after every root rotation or pruning; returns the unsubscribe function. */
  onBundleChange(listener: (bundle: CaBundle) => void): () => void {
    const s = this.#state();
    s.listeners.add(listener);
    return () => s.listeners.delete(listener);
  }

  /**
   * One check of the self-signed root rotator (root_rotator.ts): rotates the root when it has entered
   * its grace period, else drops earlier roots that have expired from the bundle.
   *
   * @param settings CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE and CA_SELF_SIGNED_CA_CERT_TTL (ms)
   * @throws {RootCaError} when the new root cannot be written or loaded (the old CA stays in force)
   */
  async checkRoot(
    settings: { gracePeriodPercentile: number; rootTtlMs: number },
    now: Date = new Date(),
  ): Promise<RootCheckOutcome> {
    const b = this.bundle;
    if (b.source !== "self-signed") return "plugged-in";
    if (await this.#follow()) return "followed";
    const root = { notBefore: b.rootNotBefore, notAfter: b.rootNotAfter };
    if (shouldRotateRoot(root, now, settings.gracePeriodPercentile)) {
      await this.rotateRoot(settings.rootTtlMs);
      return "rotated";
    }
    if (!holdsExpired(b.rootCertPem, now)) return "unchanged";
    await this.#reload();
    return "pruned";
  }

  /**
   * Rotates the self-signed root now: the Worker signs a new root with the current key, the main
   * thread writes it to `self-signed-ca-cert.pem` ahead of the current roots, and the Worker loads
   * the file again. Certificates issued from then on chain to the new root.
   *
   * @param ttlMs the new root's lifetime (CA_SELF_SIGNED_CA_CERT_TTL)
   * @returns the new bundle (new root first, then the earlier roots that are still valid)
   * @throws {RootCaError} for a plugged-in CA, or when the file cannot be written or loaded
   */
  async rotateRoot(ttlMs: number): Promise<CaBundle> {
    const s = this.#state();
    const rootPem = await s.signer.renewRoot(ttlMs);
    const caDir = s.options.caDir ?? s.options.rootCaDir;
    await writeSelfSignedRoots(caDir, rootPem, s.signer.bundle.rootCertPem);
    const bundle = await this.#reload();
    await s.options.onRootsWritten?.(await Deno.readTextFile(join(caDir, SELF_SIGNED_CERT_FILE)));
    return bundle;
  }

  /** Takes the shared Secret's roots (same key: the Worker refuses others); the file is restored on failure. */
  async #follow(): Promise<boolean> {
    const s = this.#state();
    const pulled = await s.options.pullRoots?.();
    if (pulled === undefined) return false;
    const caDir = s.options.caDir ?? s.options.rootCaDir;
    const before = await Deno.readTextFile(join(caDir, SELF_SIGNED_CERT_FILE));
    await writeSelfSignedRoots(caDir, pulled, "");
    try {
      await this.#reload();
    } catch (e) {
      await writeSelfSignedRoots(caDir, before, "");
      throw e;
    }
    return true;
  }

  async #reload(): Promise<CaBundle> {
    const s = this.#state();
    const bundle = await s.signer.reload();
    s.authenticator = this.#authenticator(s.options, bundle, s.tokens, s.audiences);
    for (const l of s.listeners) l(bundle);
    return bundle;
  }

  /** Has the signer Worker attempt a forbidden operation; for diagnostics and the sandbox tests. */
  probeSandbox(probe: SandboxProbe): Promise<ProbeResult> {
    return this.#state().signer.probe(probe);
  }
}
