/**
 * What meshd runs beside its CA so that nothing it holds expires: the self-signed root rotator
 * ({@link startRootRotation}) and the renewal of its own serving certificate
 * ({@link startServingCertificate}), with their log lines. Each returns something to stop at
 * shutdown. See README.md, "Rotation and renewal".
 *
 * @module
 */
import type { CertificateAuthority } from "./mod.ts";
import { RootCertRotator, type RootRotationSettings } from "./root_rotator.ts";
import { ServingCertificateRenewer } from "./serving_cert.ts";

/** Where these log. */
export interface MaintenanceLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * Starts the self-signed root rotator with the four CA_* settings. Every check logs what it did;
 * a failed rotation is logged and tried again at the next check (the old root stays in force).
 *
 * @returns the running rotator (stop it at shutdown)
 */
export function startRootRotation(
  ca: CertificateAuthority,
  settings: RootRotationSettings,
  log: MaintenanceLog,
): RootCertRotator {
  const rotator = new RootCertRotator(settings, async () => {
    try {
      const outcome = await ca.checkRoot(settings);
      const b = ca.bundle;
      const roots = (b.rootCertPem.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length;
      if (outcome === "rotated") {
        log.info(
          `rotated the self-signed root: new root valid until ${b.rootNotAfter.toISOString()} ` +
            `(fingerprint ${b.rootFingerprint}); the trust bundle holds ${roots} roots, the earlier ones ` +
            "until they expire",
        );
      } else if (outcome === "followed") {
        log.info(
          `took the roots of the shared Secret (another replica rotated): root valid until ` +
            `${b.rootNotAfter.toISOString()} (fingerprint ${b.rootFingerprint}), ${roots} roots in the bundle`,
        );
      } else if (outcome === "pruned") {
        log.info(`an earlier root expired and left the trust bundle, which holds ${roots} roots`);
      }
    } catch (e) {
      log.error(`self-signed root rotation failed: ${(e as Error).message}; the current root stays in force`);
    }
  });
  const delay = rotator.start();
  if (delay === undefined) {
    log.info("CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL is not positive: the self-signed root is not rotated");
  } else {
    log.info(
      `self-signed root checked every ${settings.checkIntervalMs / 1000} s after a jitter of ${
        delay / 1000
      } s; ` +
        `rotated within ${settings.gracePeriodPercentile} % of its lifetime`,
    );
  }
  return rotator;
}

/**
 * Issues meshd's serving certificate for `dnsNames`/`ipAddresses` and keeps it fresh: renewed at half
 * its lifetime, and issued again whenever the CA's trust bundle changes.
 *
 * @param req.trustBundlePem the roots for client certificates (--caCertFile); default the CA's live bundle
 * @returns the renewer, whose `credentials` serve the secure port, and `stop`, which ends renewal
 * @throws when the first certificate cannot be issued
 */
export async function startServingCertificate(
  ca: CertificateAuthority,
  req: { dnsNames: string[]; ipAddresses: string[]; trustBundlePem?: string },
  log: MaintenanceLog,
): Promise<{ renewer: ServingCertificateRenewer; stop(): void }> {
  const renewer = await ServingCertificateRenewer.start({
    issue: () => ca.issueServingCertificate({ dnsNames: req.dnsNames, ipAddresses: req.ipAddresses }),
    trustBundlePem: () => req.trustBundlePem ?? ca.trustBundlePem,
    onRenewed: (c) =>
      log.info(`renewed meshd's serving certificate, valid until ${c.notAfter.toISOString()}`),
    onError: (e, retry) =>
      log.error(`renewing meshd's serving certificate failed: ${e.message}; retrying in ${retry} ms`),
  });
  const unsubscribe = ca.onBundleChange(() => void renewer.renewNow());
  return {
    renewer,
    stop: () => {
      unsubscribe();
      renewer.stop();
    },
  };
}
