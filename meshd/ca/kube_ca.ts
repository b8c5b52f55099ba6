/**
 * One CA for every meshd replica when the Kubernetes API is the config source, as istiod shares its
 * root through Secrets (security/pkg/pki/ca/ca.go NewSelfSignedIstioCAOptions, pilot's plugged-in
 * `cacerts`). In this order:
 *
 * 1. plugged-in files (`ca-cert.pem`, ...) in ROOT_CA_DIR, e.g. the `cacerts` Secret mounted as a
 *    volume: used as they are, no API call (the file-based CA of root_ca.ts);
 * 2. a `cacerts` Secret in meshd's namespace with `ca-cert.pem`, `ca-key.pem`, `cert-chain.pem`,
 *    `root-cert.pem` (Istio's plugged-in layout), unless its type is {@link SELF_SIGNED_SECRET_TYPE}
 *    (or Istio's `istio.io/ca-root`), which marks a self-signed root stored there;
 * 3. the self-signed root's Secret, `mesh-ca-secret` (Istio's `istio-ca-secret`), or `cacerts` when
 *    USE_CACERTS_FOR_SELF_SIGNED_CA is true: read it; when absent, create it (POST) from the
 *    self-signed root already in ROOT_CA_DIR if there is one, else from a new one; a 409 means
 *    another replica created it first, and theirs is read and used.
 *
 * For 2 and 3 the Secret's material is written to a new private directory inside ROOT_CA_DIR
 * (`.from-secret-*`, mode 0700, key 0600, removed at stop) that the signer Worker reads instead of
 * ROOT_CA_DIR, so the Worker stays as narrow as before and stale files of an earlier start are never
 * taken for plugged-in ones. ROOT_CA_DIR still holds the bootstrap-token key. After a rotation of the self-signed root the Secret is
 * updated (PUT with its resourceVersion), and at every root check each replica takes the Secret's roots
 * when they changed; see README.md "One root for all replicas".
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { basename, join } from "node:path";
import {
  CACERTS_FILES,
  createSelfSignedRootCa,
  detectRootCaSource,
  loadRootCa,
  SELF_SIGNED_CERT_FILE,
  SELF_SIGNED_KEY_FILE,
  type SelfSignedRootOptions,
} from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import { pemCertificates, toPem } from "../../shared/internal/ca/pem.ts";

/** The self-signed root's Secret (Istio: `istio-ca-secret`). */
export const SELF_SIGNED_SECRET_NAME = "mesh-ca-secret";
/** The plugged-in CA's Secret, and the self-signed root's with USE_CACERTS_FOR_SELF_SIGNED_CA. */
export const CACERTS_SECRET_NAME = "cacerts";
/** The type of a Secret meshd wrote its self-signed root into (Istio: `istio.io/ca-root`). */
export const SELF_SIGNED_SECRET_TYPE = "mesh.io/ca-root";
const SELF_SIGNED_TYPES = [SELF_SIGNED_SECRET_TYPE, "istio.io/ca-root"];
/** The private copies' directory names in ROOT_CA_DIR. */
export const COPY_PREFIX = ".from-secret-";

/** The calls made: meshd's rate-limited ApiClient's `json` (errors carry `statusCode`). */
export interface SecretApi {
  json<T>(method: string, path: string, req?: { body?: unknown }): Promise<T>;
}

interface Secret {
  metadata?: { resourceVersion?: string };
  type?: string;
  data?: Record<string, string>;
}

/** Options of {@link prepareKubeCa}. */
export interface KubeCaOptions {
  api: SecretApi;
  /** meshd's namespace (--namespace / POD_NAMESPACE). */
  namespace: string;
  /** ROOT_CA_DIR. */
  rootCaDir: string;
  /** USE_CACERTS_FOR_SELF_SIGNED_CA. */
  useCacertsSecret: boolean;
  /** For a new self-signed root. */
  root: SelfSignedRootOptions;
  /** Where a failed Secret update after rotation is reported. */
  warn: (message: string) => void;
}

/** Where the CA comes from, for CertificateAuthority.start. */
export interface KubeCa {
  /** The directory the signer reads (ROOT_CA_DIR for plugged-in files, else a private copy). */
  caDir: string;
  /** For the log: which files or Secret, and whether this replica created it. */
  description: string;
  /** Updates the self-signed root's Secret after a rotation; absent when the root is not meshd's. */
  onRootsWritten?: (rootsPem: string) => Promise<void>;
  /** The Secret's roots when they differ from the copy's (another replica rotated); self-signed only. */
  pullRoots?: () => Promise<string | undefined>;
  /** Removes the private copy. */
  cleanup(): Promise<void>;
  /** Set when the root is not shared although the API is the source (meshd's namespace is missing). */
  warning?: string;
}

/** The POST of the root's Secret found no namespace: the API server is not a cluster meshd runs in. */
class NamespaceMissing extends Error {}

function statusOf(e: unknown): number | undefined {
  return (e as { statusCode?: number }).statusCode;
}

function secretPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${namespace}/secrets${name === undefined ? "" : `/${name}`}`;
}

async function getSecret(api: SecretApi, namespace: string, name: string): Promise<Secret | undefined> {
  try {
    return await api.json<Secret>("GET", secretPath(namespace, name));
  } catch (e) {
    if (statusOf(e) === 404) return undefined;
    throw e;
  }
}

function decoded(secret: Secret, where: string, key: string): string {
  const value = secret.data?.[key];
  if (typeof value !== "string" || value === "") {
    throw new RootCaError(where, `data key ${key} is missing or empty`);
  }
  return Buffer.from(value, "base64").toString("utf8");
}

const encoded = (text: string): string => Buffer.from(text, "utf8").toString("base64");

async function writePrivate(dir: string, file: string, text: string): Promise<void> {
  const mode = file.includes("key") ? 0o600 : 0o644;
  await Deno.writeTextFile(join(dir, file), text, { createNew: true, mode });
  await Deno.chmod(join(dir, file), mode);
}

/** Loads the copy to report a problem as the Secret's, naming the data key, not the private file. */
async function validate(dir: string, where: string, keyOf: (file: string) => string): Promise<void> {
  try {
    await loadRootCa(dir);
  } catch (e) {
    if (e instanceof RootCaError) {
      throw new RootCaError(where, `data key ${keyOf(basename(e.file))}: ${e.reason}`);
    }
    throw e;
  }
}

/** The self-signed root as a Secret body, in Istio's istio-ca-secret layout. */
async function selfSignedSecret(dir: string, namespace: string, name: string): Promise<unknown> {
  const roots = await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE));
  const first = toPem(pemCertificates(roots)[0].der, "CERTIFICATE");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels: { "app.kubernetes.io/part-of": "mesh" } },
    type: SELF_SIGNED_SECRET_TYPE,
    data: {
      [CACERTS_FILES.caCert]: encoded(first),
      [CACERTS_FILES.caKey]: encoded(await Deno.readTextFile(join(dir, SELF_SIGNED_KEY_FILE))),
      [CACERTS_FILES.rootCert]: encoded(roots),
      [CACERTS_FILES.certChain]: "",
    },
  };
}

/**
 * Finds or makes the CA shared by all replicas (see the module doc).
 *
 * @throws {RootCaError} naming the Secret and data key when its material is missing or invalid
 * @throws ApiError when the API cannot be read (meshd does not start with a CA of its own then:
 *   replicas would not trust each other)
 */
export async function prepareKubeCa(o: KubeCaOptions): Promise<KubeCa> {
  if (await detectRootCaSource(o.rootCaDir) === "plugged-in") {
    return {
      caDir: o.rootCaDir,
      description: `plugged-in files in ${o.rootCaDir}`,
      cleanup: () => Promise.resolve(),
    };
  }
  // Inside ROOT_CA_DIR: meshd may already write there (the token key) and nowhere else; unique per
  // process, since replicas on one host may share ROOT_CA_DIR.
  await Deno.mkdir(o.rootCaDir, { recursive: true, mode: 0o700 });
  const dir = await Deno.makeTempDir({ dir: o.rootCaDir, prefix: COPY_PREFIX });
  await Deno.chmod(dir, 0o700);
  const cleanup = () => Deno.remove(dir, { recursive: true }).catch(() => {});
  try {
    return await fromSecrets(o, dir, cleanup);
  } catch (e) {
    await cleanup();
    if (!(e instanceof NamespaceMissing)) throw e;
    return {
      caDir: o.rootCaDir,
      description: `files in ${o.rootCaDir}`,
      cleanup: () => Promise.resolve(),
      warning: `${e.message}: the CA root is not shared through a Secret; it is kept in ROOT_CA_DIR ` +
        `${o.rootCaDir}, and other replicas would not trust this one's certificates`,
    };
  }
}

async function fromSecrets(o: KubeCaOptions, dir: string, cleanup: () => Promise<void>): Promise<KubeCa> {
  const cacerts = await getSecret(o.api, o.namespace, CACERTS_SECRET_NAME);
  if (cacerts && !SELF_SIGNED_TYPES.includes(cacerts.type ?? "")) {
    const where = `Secret ${o.namespace}/${CACERTS_SECRET_NAME}`;
    for (const file of Object.values(CACERTS_FILES)) {
      await writePrivate(dir, file, decoded(cacerts, where, file));
    }
    await validate(dir, where, (f) => f);
    return { caDir: dir, description: `plugged-in CA from ${where}`, cleanup };
  }
  const name = o.useCacertsSecret ? CACERTS_SECRET_NAME : SELF_SIGNED_SECRET_NAME;
  const where = `Secret ${o.namespace}/${name}`;
  let secret = o.useCacertsSecret ? cacerts : await getSecret(o.api, o.namespace, name);
  let how = "read";
  if (!secret) {
    const local = await detectRootCaSource(o.rootCaDir) === "self-signed";
    const made = await Deno.makeTempDir({ dir: o.rootCaDir, prefix: COPY_PREFIX });
    try {
      if (local) {
        for (const f of [SELF_SIGNED_CERT_FILE, SELF_SIGNED_KEY_FILE]) {
          await writePrivate(made, f, await Deno.readTextFile(join(o.rootCaDir, f)));
        }
      } else await createSelfSignedRootCa(made, o.root);
      const body = await selfSignedSecret(made, o.namespace, name);
      try {
        secret = await o.api.json<Secret>("POST", secretPath(o.namespace), { body });
        how = `created from ${local ? `the self-signed root in ${o.rootCaDir}` : "a new self-signed root"}`;
      } catch (e) {
        if (statusOf(e) === 404) throw new NamespaceMissing(`namespace ${o.namespace} does not exist`);
        if (statusOf(e) !== 409) throw e;
        secret = await getSecret(o.api, o.namespace, name);
        if (!secret) {
          throw new RootCaError(where, "was created by another replica and then deleted; restart meshd");
        }
        how = "created by another replica first, read";
      }
    } finally {
      await Deno.remove(made, { recursive: true }).catch(() => {});
    }
  }
  await writePrivate(dir, SELF_SIGNED_CERT_FILE, decoded(secret, where, CACERTS_FILES.rootCert));
  await writePrivate(dir, SELF_SIGNED_KEY_FILE, decoded(secret, where, CACERTS_FILES.caKey));
  const keyOf = (f: string) => f === SELF_SIGNED_KEY_FILE ? CACERTS_FILES.caKey : CACERTS_FILES.rootCert;
  await validate(dir, where, keyOf);
  return {
    caDir: dir,
    description: `self-signed root from ${where} (${how})`,
    onRootsWritten: (roots) => updateRoots(o, name, roots),
    pullRoots: async () => {
      const now = await getSecret(o.api, o.namespace, name);
      if (!now) throw new RootCaError(where, "no longer exists; the roots in force are kept");
      const roots = decoded(now, where, CACERTS_FILES.rootCert);
      return roots === await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE)) ? undefined : roots;
    },
    cleanup,
  };
}

/** Writes rotated roots into the Secret; a conflict means another replica rotated too (same key: both valid). */
async function updateRoots(o: KubeCaOptions, name: string, roots: string): Promise<void> {
  const where = `Secret ${o.namespace}/${name}`;
  try {
    const secret = await getSecret(o.api, o.namespace, name);
    if (!secret) throw new Error("it no longer exists");
    const first = toPem(pemCertificates(roots)[0].der, "CERTIFICATE");
    const data = {
      ...secret.data,
      [CACERTS_FILES.rootCert]: encoded(roots),
      [CACERTS_FILES.caCert]: encoded(first),
    };
    await o.api.json("PUT", secretPath(o.namespace, name), { body: { ...secret, data } });
  } catch (e) {
    const why = statusOf(e) === 409 ? "another replica updated it meanwhile" : (e as Error).message;
    o.warn(`${where}: the rotated root was not written (${why}); replicas share the key, so trust holds`);
  }
}
