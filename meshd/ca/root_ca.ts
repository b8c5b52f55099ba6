/**
 * The CA's signing material in ROOT_CA_DIR: either plugged in by the operator in the layout of
 * Istio's `cacerts` secret (`ca-cert.pem`, `ca-key.pem`, `cert-chain.pem`, `root-cert.pem`), or a
 * self-signed RSA root that meshd creates on first start and reuses on every later start
 * (`self-signed-ca-cert.pem`, `self-signed-ca-key.pem`). Plugged-in files win when both exist, as
 * Istio's `cacerts` wins over `istio-ca-secret`.
 *
 * Loading validates everything a signer relies on and throws a {@link RootCaError} naming the file
 * and the reason: the key matches the certificate, the signing certificate is a CA, the chain runs
 * in order from `ca-cert.pem` up to a root in `root-cert.pem`, and nothing has expired. A root that
 * is present but invalid is never replaced silently: replacing it would cut every workload off.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import { join } from "node:path";
import { caProblem, describe, fingerprint, issuedBy, parseCertificate, validityProblem } from "./certs.ts";
import { importSigningKey, keyMatchesCertificate, type SigningKey } from "./keys.ts";
import { pemCertificates, toPem } from "../../shared/internal/ca/pem.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";

/** File names of a plugged-in CA, as in Istio's `cacerts` secret. */
export const CACERTS_FILES = {
  /** The signing (usually intermediate) CA certificate. */
  caCert: "ca-cert.pem",
  /** Its private key. */
  caKey: "ca-key.pem",
  /** The chain from `ca-cert.pem` (first) up towards the root; the root itself may end it. */
  certChain: "cert-chain.pem",
  /** The trust anchors: one or more root certificates. */
  rootCert: "root-cert.pem",
} as const;

/** The self-signed root's certificate file. */
export const SELF_SIGNED_CERT_FILE = "self-signed-ca-cert.pem";
/** The self-signed root's key file (mode 0600). */
export const SELF_SIGNED_KEY_FILE = "self-signed-ca-key.pem";

/** How far NotBefore is set back from the moment of signing, for clock skew (Istio's ClockSkewGracePeriod). */
export const CLOCK_SKEW_GRACE_MS = 2 * 60_000;

/** Files larger than this are refused before they are read. */
const MAX_FILE_BYTES = 1 << 20;

/** Where the CA's material comes from. */
export type RootCaSource = "plugged-in" | "self-signed";

/** The public side of the CA: everything but the key. Structured-cloneable, so it crosses postMessage. */
export interface CaBundle {
  /** Plugged-in cacerts or the self-signed root. */
  source: RootCaSource;
  /** ROOT_CA_DIR, as given. */
  dir: string;
  /** The certificate that signs workload certificates (`ca-cert.pem`, or the self-signed root). */
  signingCertPem: string;
  /**
   * The certificates a leaf's chain carries between itself and the root, the signing certificate
   * first; empty for a self-signed root, which signs leaves itself.
   */
  intermediatePems: string[];
  /** The trust anchors (`root-cert.pem`, or the self-signed root), one or more PEM certificates. */
  rootCertPem: string;
  /** SHA-256 fingerprint of the first root certificate, lower-case hex. */
  rootFingerprint: string;
  /** NotBefore of the first root (the self-signed root rotator's grace period is a share of its lifetime). */
  rootNotBefore: Date;
  /** NotAfter of the first root (ca_server_root_cert_expiry_*). */
  rootNotAfter: Date;
  /** The earliest NotAfter of the signing certificate and the intermediates (ca_server_cert_chain_expiry_*). */
  chainNotAfter: Date;
  /** The signing key's kind, e.g. `rsa-2048`, `ec-P-256`. */
  keyDescription: string;
  /** Things worth a log line that do not stop the CA (e.g. a key file readable by others). */
  warnings: string[];
}

/** The bundle together with what signing needs. Only the signer holds one of these. */
export interface LoadedCa {
  bundle: CaBundle;
  signingKey: SigningKey;
  signingCert: x509.X509Certificate;
  /** Intermediates (signing certificate first) and then the roots: the NotAfter clamp of every leaf. */
  chain: x509.X509Certificate[];
}

/** Options for creating the self-signed root. */
export interface SelfSignedRootOptions {
  /** Trust domain; the root's subject is `O=<trust domain>`, as Istio's. */
  trustDomain: string;
  /** RSA modulus length (CA_SELF_SIGNED_CA_RSA_KEY_SIZE). */
  rsaKeySize: number;
  /** Lifetime of the root (CA_SELF_SIGNED_CA_CERT_TTL), ms. */
  ttlMs: number;
  /** The current time; for tests. */
  now?: Date;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw new RootCaError(path, `cannot be examined (${(e as Error).message})`);
  }
}

async function readPemFile(path: string): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new RootCaError(path, "is missing");
    throw new RootCaError(path, `cannot be read (${(e as Error).message})`);
  }
  if (!info.isFile) throw new RootCaError(path, "is not a regular file");
  if (info.size > MAX_FILE_BYTES) {
    throw new RootCaError(path, `is ${info.size} bytes; a PEM file here is at most ${MAX_FILE_BYTES}`);
  }
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new RootCaError(path, `cannot be read (${(e as Error).message})`);
  }
}

async function readCertificates(path: string): Promise<x509.X509Certificate[]> {
  const text = await readPemFile(path);
  let blocks;
  try {
    blocks = pemCertificates(text);
  } catch (e) {
    throw new RootCaError(path, (e as Error).message);
  }
  if (blocks.length === 0) throw new RootCaError(path, "contains no PEM CERTIFICATE block");
  return blocks.map((b, i) => {
    try {
      return parseCertificate(b.der, blocks.length === 1 ? "the certificate" : `certificate ${i + 1}`);
    } catch (e) {
      throw new RootCaError(path, (e as Error).message);
    }
  });
}

async function modeWarning(path: string): Promise<string | undefined> {
  const mode = (await Deno.stat(path)).mode;
  if (mode === null || (mode & 0o077) === 0) return undefined;
  return `${path}: private key is readable by group or others (mode ${(mode & 0o777).toString(8)}); ` +
    "make it 0600";
}

async function loadKey(path: string, cert: x509.X509Certificate, certFile: string): Promise<SigningKey> {
  const pem = await readPemFile(path);
  let key: SigningKey;
  try {
    key = await importSigningKey(pem);
  } catch (e) {
    throw new RootCaError(path, (e as Error).message);
  }
  if (!keyMatchesCertificate(pem, cert.toString("pem"))) {
    throw new RootCaError(path, `does not match the certificate in ${certFile} (different public key)`);
  }
  return key;
}

function checkCa(path: string, cert: x509.X509Certificate, what: string, now: Date): void {
  const notCa = caProblem(cert);
  if (notCa) throw new RootCaError(path, `${what} ${describe(cert)} ${notCa}`);
  const invalid = validityProblem(cert, now);
  if (invalid) throw new RootCaError(path, `${what} ${describe(cert)} ${invalid}`);
}

/** Which kind of CA material ROOT_CA_DIR holds, or `none` when meshd should create a self-signed root. */
export async function detectRootCaSource(dir: string): Promise<RootCaSource | "none"> {
  for (const f of Object.values(CACERTS_FILES)) if (await exists(join(dir, f))) return "plugged-in";
  const cert = await exists(join(dir, SELF_SIGNED_CERT_FILE));
  const key = await exists(join(dir, SELF_SIGNED_KEY_FILE));
  if (cert && key) return "self-signed";
  if (cert || key) {
    const [present, missing] = cert
      ? [SELF_SIGNED_CERT_FILE, SELF_SIGNED_KEY_FILE]
      : [SELF_SIGNED_KEY_FILE, SELF_SIGNED_CERT_FILE];
    throw new RootCaError(
      join(dir, missing),
      `is missing while ${present} exists; restore it, or remove ${present} to create a new root ` +
        "(workloads then need new certificates)",
    );
  }
  return "none";
}

async function loadPluggedIn(dir: string, now: Date): Promise<LoadedCa> {
  const path = (f: string) => join(dir, f);
  const missing = [];
  for (const f of Object.values(CACERTS_FILES)) if (!(await exists(path(f)))) missing.push(f);
  if (missing.length > 0) {
    throw new RootCaError(
      dir,
      `incomplete plugged-in CA: ${missing.join(", ")} missing (cacerts needs ${
        Object.values(CACERTS_FILES).join(", ")
      })`,
    );
  }
  const caCertFile = path(CACERTS_FILES.caCert);
  const [signingCert, ...extra] = await readCertificates(caCertFile);
  if (extra.length > 0) {
    throw new RootCaError(caCertFile, "holds more than one certificate; put the chain in cert-chain.pem");
  }
  checkCa(caCertFile, signingCert, "the certificate", now);
  const keyFile = path(CACERTS_FILES.caKey);
  const signingKey = await loadKey(keyFile, signingCert, CACERTS_FILES.caCert);

  const rootFile = path(CACERTS_FILES.rootCert);
  const roots = await readCertificates(rootFile);
  for (const [i, root] of roots.entries()) {
    checkCa(rootFile, root, roots.length === 1 ? "the root" : `root ${i + 1}`, now);
  }

  const chainFile = path(CACERTS_FILES.certChain);
  const chain = await readCertificates(chainFile);
  if (!chain[0].equal(signingCert)) {
    throw new RootCaError(
      chainFile,
      `the first certificate is ${describe(chain[0])}, not ca-cert.pem's ${describe(signingCert)}; ` +
        "the chain must run from ca-cert.pem up towards the root",
    );
  }
  for (let i = 1; i < chain.length; i++) {
    checkCa(chainFile, chain[i], `certificate ${i + 1}`, now);
    if (!(await issuedBy(chain[i - 1], chain[i]))) {
      throw new RootCaError(
        chainFile,
        `certificate ${i} ${describe(chain[i - 1])} is not issued by certificate ${i + 1} ` +
          `${describe(chain[i])}; the chain must be ordered from ca-cert.pem up to the root`,
      );
    }
  }
  // The chain may end with the root itself (Istio's tools write ca-cert + root); that copy is not
  // sent as an intermediate, since the root travels last in every response anyway.
  const last = chain[chain.length - 1];
  const intermediates = roots.some((r) => r.equal(last)) ? chain.slice(0, -1) : chain;
  const top = intermediates[intermediates.length - 1];
  if (top !== undefined) {
    let anchored = false;
    for (const r of roots) if (await issuedBy(top, r)) anchored = true;
    if (!anchored) {
      throw new RootCaError(
        chainFile,
        `the last certificate ${describe(top)} is not issued by ${
          roots.length === 1 ? `the root ${describe(roots[0])}` : "any certificate"
        } in root-cert.pem`,
      );
    }
  }
  const warnings = [await modeWarning(keyFile)].filter((w): w is string => w !== undefined);
  const rootCertPem = roots.map((r) => r.toString("pem") + "\n").join("");
  return {
    bundle: {
      source: "plugged-in",
      dir,
      signingCertPem: signingCert.toString("pem") + "\n",
      intermediatePems: intermediates.map((c) => c.toString("pem") + "\n"),
      rootCertPem,
      rootFingerprint: await fingerprint(roots[0]),
      rootNotBefore: roots[0].notBefore,
      rootNotAfter: roots[0].notAfter,
      chainNotAfter: new Date(Math.min(...intermediates.map((c) => c.notAfter.getTime()))),
      keyDescription: signingKey.description,
      warnings,
    },
    signingKey,
    signingCert,
    chain: [...intermediates, ...roots],
  };
}

/**
 * The roots that follow the signing root in `self-signed-ca-cert.pem`: earlier roots of the same key
 * that the rotator keeps in the trust bundle until they expire (see root_renewal.ts). Each must be a
 * self-signed CA of the signing root's key; expired ones are left out.
 */
async function previousRoots(
  certFile: string,
  root: x509.X509Certificate,
  previous: x509.X509Certificate[],
  now: Date,
): Promise<x509.X509Certificate[]> {
  const spki = new Uint8Array(root.publicKey.rawData).join();
  const kept = [];
  for (const [i, p] of previous.entries()) {
    const what = `certificate ${i + 2}`;
    if (new Uint8Array(p.publicKey.rawData).join() !== spki || !(await issuedBy(p, p)) || caProblem(p)) {
      throw new RootCaError(
        certFile,
        `${what} ${describe(p)} is not an earlier self-signed root of the same key; only the rotator's ` +
          "earlier roots may follow the root",
      );
    }
    if (p.notAfter.getTime() > now.getTime()) kept.push(p);
  }
  return kept;
}

async function loadSelfSigned(dir: string, now: Date): Promise<LoadedCa> {
  const certFile = join(dir, SELF_SIGNED_CERT_FILE);
  const keyFile = join(dir, SELF_SIGNED_KEY_FILE);
  const [root, ...extra] = await readCertificates(certFile);
  const notCa = caProblem(root);
  if (notCa) throw new RootCaError(certFile, `the root ${describe(root)} ${notCa}`);
  if (!(await issuedBy(root, root))) throw new RootCaError(certFile, "is not a self-signed certificate");
  const invalid = validityProblem(root, now);
  if (invalid) {
    throw new RootCaError(
      certFile,
      `the self-signed root ${invalid}; remove ${SELF_SIGNED_CERT_FILE} and ${SELF_SIGNED_KEY_FILE} ` +
        "to create a new one (workloads then need new certificates)",
    );
  }
  const previous = await previousRoots(certFile, root, extra, now);
  const signingKey = await loadKey(keyFile, root, SELF_SIGNED_CERT_FILE);
  const warnings = [await modeWarning(keyFile)].filter((w): w is string => w !== undefined);
  const pem = root.toString("pem") + "\n";
  return {
    bundle: {
      source: "self-signed",
      dir,
      signingCertPem: pem,
      intermediatePems: [],
      rootCertPem: pem + previous.map((p) => p.toString("pem") + "\n").join(""),
      rootFingerprint: await fingerprint(root),
      rootNotBefore: root.notBefore,
      rootNotAfter: root.notAfter,
      chainNotAfter: root.notAfter,
      keyDescription: signingKey.description,
      warnings,
    },
    signingKey,
    signingCert: root,
    chain: [root],
  };
}

/**
 * Loads and validates the CA in `dir` without writing anything (the signer Worker, which may only
 * read ROOT_CA_DIR, calls this).
 *
 * @throws {RootCaError} naming the file and the reason, also when `dir` holds no CA at all
 */
export async function loadRootCa(dir: string, options: { now?: Date } = {}): Promise<LoadedCa> {
  const now = options.now ?? new Date();
  const source = await detectRootCaSource(dir);
  if (source === "plugged-in") return await loadPluggedIn(dir, now);
  if (source === "self-signed") return await loadSelfSigned(dir, now);
  throw new RootCaError(
    dir,
    `holds no CA: neither ${Object.values(CACERTS_FILES).join(", ")} nor ${SELF_SIGNED_CERT_FILE}`,
  );
}

/** Serial numbers for new certificates: 128 random bits, positive, as Istio's genSerialNum. */
export function randomSerial(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] = (b[0] & 0x7f) | 0x01; // positive and 16 bytes long
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * Creates a self-signed RSA root in `dir` (made with mode 0700 if absent): the key with mode 0600,
 * then the certificate. Refuses to overwrite either file.
 *
 * @throws {RootCaError} for an unusable key size or TTL, or when a file appears meanwhile
 */
export async function createSelfSignedRootCa(dir: string, options: SelfSignedRootOptions): Promise<void> {
  const { rsaKeySize, ttlMs, trustDomain } = options;
  if (!Number.isInteger(rsaKeySize) || rsaKeySize < 2048 || rsaKeySize > 8192 || rsaKeySize % 8 !== 0) {
    throw new RootCaError(dir, `CA_SELF_SIGNED_CA_RSA_KEY_SIZE ${rsaKeySize}: use 2048 to 8192 bits`);
  }
  if (!(ttlMs > 0)) {
    throw new RootCaError(dir, `CA_SELF_SIGNED_CA_CERT_TTL must be positive; got ${ttlMs} ms`);
  }
  const now = (options.now ?? new Date()).getTime();
  const keys = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: rsaKeySize,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ O: [trustDomain] }],
    notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
    notAfter: new Date(now + ttlMs),
    keys,
    signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const keyPem = toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await writeNew(join(dir, SELF_SIGNED_KEY_FILE), keyPem, 0o600);
  await writeNew(join(dir, SELF_SIGNED_CERT_FILE), cert.toString("pem") + "\n", 0o644);
}

async function writeNew(path: string, text: string, mode: number): Promise<void> {
  try {
    await Deno.writeTextFile(path, text, { createNew: true, mode });
    await Deno.chmod(path, mode); // the umask may have taken bits away; never added any
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) {
      throw new RootCaError(
        path,
        "appeared while the self-signed root was being created; is another meshd using this directory?",
      );
    }
    throw new RootCaError(path, `cannot be written (${(e as Error).message})`);
  }
}

/**
 * Symbolic links in `dir` whose targets lie outside it. The signer Worker may read ROOT_CA_DIR, and
 * Deno's read permission follows links, so such a link widens what the Worker can read.
 * (Kubernetes secret mounts link to `..data/` inside the directory, which is fine.)
 */
export async function outsideSymlinkWarnings(dir: string): Promise<string[]> {
  const warnings: string[] = [];
  let real: string;
  try {
    real = await Deno.realPath(dir);
  } catch {
    return warnings;
  }
  for await (const e of Deno.readDir(dir)) {
    if (!e.isSymlink) continue;
    const path = join(dir, e.name);
    const target = await Deno.realPath(path).catch(() => undefined);
    if (target !== undefined && target !== real && !target.startsWith(real + "/")) {
      warnings.push(
        `${path}: symbolic link to ${target}, outside ROOT_CA_DIR; the signer Worker can read its target`,
      );
    }
  }
  return warnings;
}

/**
 * Makes sure `dir` holds a CA: plugged-in or an existing self-signed root is kept as it is (and
 * validated by the caller's {@link loadRootCa}); otherwise a self-signed root is created.
 *
 * @returns the source, whether a root was created just now, and warnings about the directory
 */
export async function ensureRootCa(
  dir: string,
  options: SelfSignedRootOptions,
): Promise<{ source: RootCaSource; created: boolean; warnings: string[] }> {
  const source = await detectRootCaSource(dir);
  if (source !== "none") return { source, created: false, warnings: await outsideSymlinkWarnings(dir) };
  await createSelfSignedRootCa(dir, options);
  return { source: "self-signed", created: true, warnings: await outsideSymlinkWarnings(dir) };
}
