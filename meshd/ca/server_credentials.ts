/**
 * gRPC server credentials for meshd's secure port (--secureGRPCAddr): TLS with meshd's serving
 * certificate, asking clients for a certificate but not requiring one. A workload's first request
 * comes without a certificate (it authenticates with a bootstrap token); renewals present the
 * mesh certificate they hold. A presented certificate is verified against the mesh's roots by the
 * TLS layer, and only a verified one reaches the handler as `sslPeerCertificate` (grpc-js leaves the
 * auth context empty for an unverified peer), which authenticate.ts then checks again.
 *
 * The trust roots are always passed explicitly, never taken from GRPC_DEFAULT_SSL_ROOTS_FILE_PATH
 * (see /work/shared/platform.md).
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";

/** The server's own certificate and the roots that client certificates must chain to. */
export interface ServingMaterial {
  /** PEM chain of the server's certificate, leaf first. */
  certChainPem: string;
  /** PEM private key of the server's certificate. */
  privateKeyPem: string;
  /** PEM roots for client certificates: the mesh's trust bundle. */
  trustBundlePem: string;
}

/** grpc-js's listener of CA certificate updates. */
export type CaListener = grpc.experimental.CaCertificateUpdateListener;
/** grpc-js's listener of identity certificate updates. */
export type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;

/** A certificate provider whose material is set by {@link update} (for rotation) rather than read from files. */
export class StaticCertificateProvider implements grpc.experimental.CertificateProvider {
  #material: ServingMaterial;
  readonly #ca = new Set<CaListener>();
  readonly #identity = new Set<IdentityListener>();

  /**
   * Creates the provider.
   *
   * @param material the initial certificate, key and roots
   */
  constructor(material: ServingMaterial) {
    this.#material = material;
  }

  /** Replaces the material; servers using it pick it up for new connections. */
  update(material: ServingMaterial): void {
    this.#material = material;
    for (const l of this.#ca) l(this.#caUpdate());
    for (const l of this.#identity) l(this.#identityUpdate());
  }

  #caUpdate(): grpc.experimental.CaCertificateUpdate {
    return { caCertificate: Buffer.from(this.#material.trustBundlePem) };
  }

  #identityUpdate(): grpc.experimental.IdentityCertificateUpdate {
    return {
      certificate: Buffer.from(this.#material.certChainPem),
      privateKey: Buffer.from(this.#material.privateKeyPem),
    };
  }

  /** Part of grpc-js's CertificateProvider. */
  addCaCertificateListener(listener: CaListener): void {
    this.#ca.add(listener);
    // Asynchronously, as grpc-js's own provider does: grpc-js registers its watcher only after
    // adding the listener, and an update delivered before that would be lost.
    queueMicrotask(() => this.#ca.has(listener) && listener(this.#caUpdate()));
  }

  /** Part of grpc-js's CertificateProvider. */
  removeCaCertificateListener(listener: CaListener): void {
    this.#ca.delete(listener);
  }

  /** Part of grpc-js's CertificateProvider. */
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.#identity.add(listener);
    queueMicrotask(() => this.#identity.has(listener) && listener(this.#identityUpdate()));
  }

  /** Part of grpc-js's CertificateProvider. */
  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.#identity.delete(listener);
  }
}

/**
 * Server credentials: TLS with `provider`'s certificate; client certificates requested and, when
 * `requireClientCertificate`, required.
 */
export function meshServerCredentials(
  provider: StaticCertificateProvider,
  options: { requireClientCertificate?: boolean } = {},
): grpc.ServerCredentials {
  // grpc-js names the parameters (caProvider, identityProvider) but passes them on the other way
  // round; one provider serving both makes the order irrelevant.
  return grpc.experimental.createCertificateProviderServerCredentials(
    provider,
    provider,
    options.requireClientCertificate ?? false,
  );
}
