/**
 * Renewing the self-signed root as istiod's SelfSignedCARootCertRotator does
 * (security/pkg/pki/ca/selfsignedcarootcertrotator.go): a new root certificate from the **existing
 * key** (Istio's GenRootCertFromExistingKey), with the same subject and subject key identifier and a
 * new lifetime of CA_SELF_SIGNED_CA_CERT_TTL. Because key and name stay, every certificate the old
 * root signed also verifies against the new one and the other way round, so workloads that have not
 * yet received the new trust bundle keep talking to those that have.
 *
 * Beyond Istio, which replaces the root in its secret, the earlier roots stay in the trust bundle
 * until they expire: `self-signed-ca-cert.pem` holds the new root first, then at most
 * {@link MAX_PREVIOUS_ROOTS} earlier ones (root_ca.ts drops expired ones when it loads the file).
 *
 * {@link renewSelfSignedRoot} runs in the signer Worker, next to the key; {@link writeSelfSignedRoots}
 * runs in meshd's main thread, which may write ROOT_CA_DIR (the Worker may not).
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import { join } from "node:path";
import { CLOCK_SKEW_GRACE_MS, type LoadedCa, randomSerial, SELF_SIGNED_CERT_FILE } from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";

/** How many earlier roots `self-signed-ca-cert.pem` keeps after the current one. */
export const MAX_PREVIOUS_ROOTS = 3;

/**
 * A new self-signed root from the loaded root's key: same subject, extensions and key; serial,
 * NotBefore (now − 2 min) and NotAfter (now + `ttlMs`) new.
 *
 * @returns the PEM certificate, ending in a newline
 * @throws {RootCaError} when the CA is plugged in (its roots belong to the operator) or the TTL is not positive
 */
export async function renewSelfSignedRoot(
  ca: LoadedCa,
  options: { ttlMs: number; now?: Date },
): Promise<string> {
  const root = ca.signingCert;
  if (ca.bundle.source !== "self-signed") {
    throw new RootCaError(
      ca.bundle.dir,
      "only a self-signed root is rotated by meshd; plugged-in roots are the operator's",
    );
  }
  if (!(options.ttlMs > 0)) {
    throw new RootCaError(
      ca.bundle.dir,
      `CA_SELF_SIGNED_CA_CERT_TTL must be positive; got ${options.ttlMs} ms`,
    );
  }
  const now = (options.now ?? new Date()).getTime();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: root.subjectName,
    issuer: root.subjectName,
    notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
    notAfter: new Date(now + options.ttlMs),
    publicKey: root.publicKey,
    signingKey: ca.signingKey.key,
    signingAlgorithm: ca.signingKey.algorithm,
    // The root's own extensions (basic constraints, key usage, subject key identifier), unchanged.
    extensions: root.extensions,
  });
  return cert.toString("pem") + "\n";
}

/**
 * Replaces `self-signed-ca-cert.pem` in `dir` with `newRootPem` followed by the still valid roots of
 * `previousRootsPem` (newest first, at most {@link MAX_PREVIOUS_ROOTS}). Written to a temporary file
 * and renamed, so a reader (the Worker, another meshd) never sees a partial file.
 *
 * @throws {RootCaError} when the file cannot be written
 */
export async function writeSelfSignedRoots(
  dir: string,
  newRootPem: string,
  previousRootsPem: string,
  now: Date = new Date(),
): Promise<void> {
  const previous = pemCertificates(previousRootsPem)
    .map((b) => new x509.X509Certificate(b.der as Uint8Array<ArrayBuffer>))
    .filter((c) => c.notAfter.getTime() > now.getTime())
    .slice(0, MAX_PREVIOUS_ROOTS);
  const text = newRootPem + previous.map((c) => c.toString("pem") + "\n").join("");
  const file = join(dir, SELF_SIGNED_CERT_FILE);
  const temp = `${file}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.writeTextFile(temp, text, { createNew: true, mode: 0o644 });
    await Deno.rename(temp, file);
  } catch (e) {
    await Deno.remove(temp).catch(() => {});
    throw new RootCaError(file, `cannot be written (${(e as Error).message})`);
  }
}
