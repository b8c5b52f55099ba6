/**
 * meshd's serving certificate and client roots from a grpc-js `CertificateProvider` (the feed
 * `meshd/discovery.ts` keeps current from the serving certificate's renewer), as PEM text: what the
 * serving children and the in-process codec server (../grpc_codec/) build their TLS contexts from.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { TlsMaterial } from "./wire.ts";

/**
 * Listens to `provider`; calls `onUpdate` with the whole material on every update once both the
 * certificate and the roots are known.
 *
 * @returns the first complete material (resolves when the provider has given both)
 */
export async function watchTlsMaterial(
  provider: grpc.experimental.CertificateProvider,
  onUpdate: (material: TlsMaterial) => void,
): Promise<TlsMaterial> {
  const material: Partial<TlsMaterial> = {};
  const first = Promise.withResolvers<void>();
  const changed = () => {
    if (!material.trustBundlePem || !material.certChainPem) return;
    first.resolve();
    onUpdate({ ...material } as TlsMaterial);
  };
  provider.addCaCertificateListener((u) => {
    if (u) material.trustBundlePem = Buffer.from(u.caCertificate).toString();
    changed();
  });
  provider.addIdentityCertificateListener((u) => {
    if (u) {
      material.certChainPem = Buffer.from(u.certificate).toString();
      material.privateKeyPem = Buffer.from(u.privateKey).toString();
    }
    changed();
  });
  await first.promise;
  return { ...material } as TlsMaterial;
}
