/**
 * meshd's own serving certificate (the secure gRPC port; the webhook port when there is one), kept
 * fresh: issued by the mesh CA, renewed before it expires, and issued again at once when the trust
 * bundle changes (a root rotation), as istiod regenerates its DNS certificate when the root changes
 * (`watchRootCertAndGenKeyCert` in pilot/pkg/bootstrap/certcontroller.go).
 *
 * Renewal comes at {@link DEFAULT_RENEW_RATIO} (half) of the lifetime, measured from when the
 * certificate was issued to its NotAfter: Istio's defaultCertGracePeriodRatio of 0.5 for istiod's
 * certificate, measured as the proxy agent measures it, because the CA backdates NotBefore by 2
 * minutes and a 60 s certificate would otherwise look due on arrival. A failed issue is retried after
 * 1 s, doubling to 30 s; the certificate in force stays until a new one arrives.
 *
 * The new certificate reaches grpc-js through {@link StaticCertificateProvider.update}: the TLS
 * server takes it for new handshakes (`setSecureContext`), and connections already established, with
 * their streams, are not touched (TLS checks a certificate's validity only during the handshake).
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import {
  meshServerCredentials,
  type ServingMaterial,
  StaticCertificateProvider,
} from "./server_credentials.ts";

/** Share of a serving certificate's lifetime after which it is renewed. */
export const DEFAULT_RENEW_RATIO = 0.5;
/** First retry delay after a failed issue, ms; doubles up to {@link MAX_RETRY_MS}. */
export const FIRST_RETRY_MS = 1000;
/** Longest retry delay, ms. */
export const MAX_RETRY_MS = 30_000;
/** Largest delay setTimeout accepts, ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One serving certificate: the chain (leaf first), its key, and its NotAfter. */
export interface IssuedServingCertificate {
  certChainPem: string;
  privateKeyPem: string;
  notAfter: Date;
}

/** Options of {@link ServingCertificateRenewer.start}. */
export interface ServingCertificateOptions {
  /** Issues a new certificate and key (`CertificateAuthority.issueServingCertificate`). */
  issue: () => Promise<IssuedServingCertificate>;
  /** The roots client certificates must chain to, read at every issue (the live trust bundle). */
  trustBundlePem: () => string;
  /** Share of the lifetime after which to renew; default {@link DEFAULT_RENEW_RATIO}. */
  renewRatio?: number;
  /** Called after every successful issue after the first. */
  onRenewed?: (cert: IssuedServingCertificate) => void;
  /** Called after a failed issue, with the delay before the next attempt. */
  onError?: (error: Error, retryInMs: number) => void;
}

/**
 * When to renew a certificate issued at `issuedAt` that expires at `notAfter` (ms since the epoch):
 * `issuedAt + (notAfter − issuedAt) × ratio`, never before `issuedAt`.
 */
export function servingRenewAt(
  issuedAt: number,
  notAfter: number,
  ratio: number = DEFAULT_RENEW_RATIO,
): number {
  return issuedAt + Math.max(0, notAfter - issuedAt) * ratio;
}

/** A serving certificate that renews itself; its {@link credentials} follow every renewal. */
export class ServingCertificateRenewer {
  readonly #options: ServingCertificateOptions;
  readonly #provider: StaticCertificateProvider;
  readonly #credentials: grpc.ServerCredentials;
  readonly #listeners = new Set<(material: ServingMaterial) => void>();
  #current: IssuedServingCertificate;
  #material: ServingMaterial;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #retryMs = FIRST_RETRY_MS;
  #renewing: Promise<void> | undefined;
  #stopped = false;

  private constructor(options: ServingCertificateOptions, first: IssuedServingCertificate) {
    this.#options = options;
    this.#current = first;
    this.#material = this.#materialOf(first);
    this.#provider = new StaticCertificateProvider(this.#material);
    this.#credentials = meshServerCredentials(this.#provider);
  }

  /**
   * Issues the first certificate and schedules its renewal.
   *
   * @throws whatever `issue` throws for the first certificate (meshd cannot serve without one)
   */
  static async start(options: ServingCertificateOptions): Promise<ServingCertificateRenewer> {
    const ratio = options.renewRatio ?? DEFAULT_RENEW_RATIO;
    if (!(ratio > 0 && ratio < 1)) throw new RangeError("renewRatio must be between 0 and 1");
    const renewer = new ServingCertificateRenewer(options, await options.issue());
    renewer.#schedule(servingRenewAt(Date.now(), renewer.#current.notAfter.getTime(), ratio));
    return renewer;
  }

  /** grpc-js server credentials: TLS with the current certificate, client certificates requested, verified, optional. */
  get credentials(): grpc.ServerCredentials {
    return this.#credentials;
  }

  /** The certificate in force. */
  get certificate(): IssuedServingCertificate {
    return this.#current;
  }

  /** The certificate in force, its key and the client roots, as TLS servers other than grpc-js's need them. */
  get material(): ServingMaterial {
    return this.#material;
  }

  /**
   * Calls `listener` with the new material after every renewal (for a TLS server that is not fed by
   * {@link credentials}, such as one in another process); returns the unsubscribe function.
   */
  onUpdate(listener: (material: ServingMaterial) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #materialOf(cert: IssuedServingCertificate): ServingMaterial {
    return {
      certChainPem: cert.certChainPem,
      privateKeyPem: cert.privateKeyPem,
      trustBundlePem: this.#options.trustBundlePem(),
    };
  }

  /** Issues a new certificate now (after a root rotation); waits for one under way instead of starting another. */
  renewNow(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    clearTimeout(this.#timer);
    this.#renewing ??= this.#renew().finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  /** Stops renewing; the certificate in force stays. Idempotent. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  async #renew(): Promise<void> {
    try {
      const cert = await this.#options.issue();
      if (this.#stopped) return;
      this.#current = cert;
      this.#material = this.#materialOf(cert);
      this.#provider.update(this.#material);
      for (const l of this.#listeners) l(this.#material);
      this.#retryMs = FIRST_RETRY_MS;
      this.#schedule(servingRenewAt(Date.now(), cert.notAfter.getTime(), this.#options.renewRatio));
      this.#options.onRenewed?.(cert);
    } catch (e) {
      if (this.#stopped) return;
      const delay = this.#retryMs;
      this.#retryMs = Math.min(MAX_RETRY_MS, this.#retryMs * 2);
      this.#schedule(Date.now() + delay);
      this.#options.onError?.(e as Error, delay);
    }
  }

  #schedule(at: number): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    const left = at - Date.now();
    // A timer longer than setTimeout allows is re-armed when it fires early.
    this.#timer = left > MAX_TIMER_MS
      ? setTimeout(() => this.#schedule(at), MAX_TIMER_MS)
      : setTimeout(() => void this.renewNow(), Math.max(0, left));
  }
}
