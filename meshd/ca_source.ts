/**
 * What meshd's CA takes from the Kubernetes API when that is the config source (issue 14, items 3
 * and 4): the root shared by all replicas through a Secret (ca/kube_ca.ts) and the TokenReview check
 * of service-account tokens (ca/token_review.ts), both over the one rate-limited API client of
 * kube_control.ts. With --configDir neither applies and the CA is file-based as before.
 *
 * @module
 */
import type { CertificateAuthorityOptions } from "./ca/mod.ts";
import { parseTokenAudiences } from "./ca/mod.ts";
import { prepareKubeCa } from "./ca/kube_ca.ts";
import { KubeTokenReviewer } from "./ca/token_review.ts";
import type { KubeConnection } from "./kube_control.ts";
import type { MeshdEnvironment } from "./options/environment.ts";
import { RootCaError } from "../shared/internal/ca/root_ca_error.ts";

/** The CA's Kubernetes parts, ready for CertificateAuthority.start. */
export interface CaSource {
  /** Spread into CertificateAuthority.start's options. */
  start: Pick<CertificateAuthorityOptions, "caDir" | "reviewToken" | "onRootsWritten" | "pullRoots">;
  /** Where the CA comes from, for the log; undefined for the file-based CA. */
  description?: string;
  /** Removes the private copy of the Secret's material; call after the CA stopped. */
  cleanup(): Promise<void>;
}

/**
 * Prepares the CA's source.
 *
 * @param kube the API connection, or undefined with --configDir
 * @param namespace meshd's namespace (--namespace / POD_NAMESPACE): where the CA Secrets live
 * @throws RootCaError or ApiError when the Secrets cannot be read or hold invalid material
 */
export async function caSource(
  kube: KubeConnection | undefined,
  env: MeshdEnvironment,
  namespace: string,
  trustDomain: string,
  log: { warn(message: string): void },
): Promise<CaSource> {
  if (!kube) {
    if (env.USE_CACERTS_FOR_SELF_SIGNED_CA) {
      log.warn("USE_CACERTS_FOR_SELF_SIGNED_CA has no effect: --configDir is the config source (no Secrets)");
    }
    return { start: {}, cleanup: () => Promise.resolve() };
  }
  const ca = await prepareKubeCa({
    api: kube.api,
    namespace,
    rootCaDir: env.ROOT_CA_DIR,
    useCacertsSecret: env.USE_CACERTS_FOR_SELF_SIGNED_CA,
    root: {
      trustDomain,
      rsaKeySize: env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE,
      ttlMs: env.CA_SELF_SIGNED_CA_CERT_TTL,
    },
    warn: (m) => log.warn(m),
  }).catch((e: Error) => {
    if (e instanceof RootCaError) throw e; // names the Secret and the data key already
    throw new Error(`the CA root from the Kubernetes API (namespace ${namespace}): ${e.message}`, {
      cause: e,
    });
  });
  if (ca.warning) log.warn(ca.warning);
  const reviewer = new KubeTokenReviewer({
    api: kube.api,
    audiences: parseTokenAudiences(env.TOKEN_AUDIENCES),
    trustDomain,
  });
  return {
    start: {
      caDir: ca.caDir,
      reviewToken: (t) => reviewer.review(t),
      onRootsWritten: ca.onRootsWritten,
      pullRoots: ca.pullRoots,
    },
    description: ca.warning ? undefined : ca.description,
    cleanup: ca.cleanup,
  };
}
