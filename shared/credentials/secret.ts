/**
 * Gateway TLS credentials from Kubernetes `v1` `Secret`s, as Istio's gateways read them
 * (pilot/pkg/credentials/kube/secrets.go; istio.io/latest/docs/tasks/traffic-management/ingress/secure-ingress):
 * a certificate chain and private key in `tls.crt`/`tls.key` (type `kubernetes.io/tls`) or Istio's
 * generic `cert`/`key` (type `Opaque`), and a client CA bundle in `ca.crt` or `cacert`, in the same
 * secret or in a separate `<name>-cacert` secret. `data` is base64 as `kubectl create secret tls
 * --dry-run=client -o yaml` writes it; `stringData` holds plain text.
 *
 * Validation names the field and the reason (bad base64, not PEM, a key that does not match the
 * certificate) and warns about an expired certificate. No message ever contains key material, and
 * {@link redactSecret} blanks private keys for debug output.
 *
 * @module
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { error, type FieldPath, type Finding, warning } from "../api/finding.ts";

/** Secret types a gateway credential may have. */
export const CREDENTIAL_SECRET_TYPES: readonly string[] = ["kubernetes.io/tls", "Opaque"];

/** Suffix of the secret that holds a MUTUAL server's client CA when it is not in the main secret. */
export const CA_SECRET_SUFFIX = "-cacert";

/** The PEM material of one secret, decoded; empty strings for what it does not hold. */
export interface TlsCredential {
  /** The secret's namespace. */
  namespace: string;
  /** The secret's name. */
  name: string;
  /** PEM certificate chain, leaf first (`tls.crt` or `cert`). */
  certChainPem: string;
  /** PEM private key (`tls.key` or `key`). Never logged or shown. */
  privateKeyPem: string;
  /** PEM CA bundle for client certificates (`ca.crt` or `cacert`). */
  caPem: string;
  /** Expiry of the leaf certificate, ms since the epoch; 0 without a certificate. */
  notAfter: number;
}

/** Options of {@link parseTlsSecret}. */
export interface ParseSecretOptions {
  /** The time expiry is judged at, ms since the epoch; default now. */
  now?: number;
}

/** The outcome of {@link parseTlsSecret}: the credential unless a finding is an error. */
export interface ParsedSecret {
  /** Present when no finding is an error. */
  credential?: TlsCredential;
  /** Errors and warnings, each with its field path (`data["tls.crt"]`). */
  findings: Finding[];
}

type Obj = Record<string, unknown>;

const CERT_KEYS = [["tls.crt", "tls.key"], ["cert", "key"]] as const;
const CA_KEYS = ["ca.crt", "cacert"] as const;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Whether a document's apiVersion and kind make it a Kubernetes Secret. */
export function isSecretDocument(apiVersion: unknown, kind: unknown): boolean {
  return apiVersion === "v1" && kind === "Secret";
}

/**
 * Validates a Secret and decodes its credential.
 *
 * @param resource the parsed document (`apiVersion: v1`, `kind: Secret`)
 * @returns the credential and every finding; never throws on bad input
 */
export function parseTlsSecret(resource: unknown, options: ParseSecretOptions = {}): ParsedSecret {
  const findings: Finding[] = [];
  const doc = asObj(resource) ?? {};
  const meta = asObj(doc.metadata);
  const name = meta?.name;
  if (typeof name !== "string" || name === "") {
    findings.push(error(["metadata", "name"], "required field is missing"));
  }
  const type = doc.type ?? "Opaque";
  if (typeof type !== "string" || !CREDENTIAL_SECRET_TYPES.includes(type)) {
    findings.push(
      error(
        ["type"],
        `secret type ${JSON.stringify(type)} is not one of ${CREDENTIAL_SECRET_TYPES.join(", ")}`,
      ),
    );
  }
  const values = new Map<string, { text: string; at: FieldPath }>();
  for (const field of ["data", "stringData"] as const) {
    const section = doc[field];
    if (section === undefined || section === null) continue;
    const obj = asObj(section);
    if (!obj) {
      findings.push(error([field], "expected a map of key to value"));
      continue;
    }
    for (const [key, raw] of Object.entries(obj)) {
      const at = [field, key];
      if (typeof raw !== "string") {
        findings.push(error(at, "expected a string"));
        continue;
      }
      const text = field === "data" ? decodeBase64(raw) : raw;
      if (text === undefined) findings.push(error(at, "not valid base64"));
      // stringData wins over data for the same key, as the Kubernetes API server merges them.
      else values.set(key, { text, at });
    }
  }
  for (const key of Object.keys(doc)) {
    if (!["apiVersion", "kind", "metadata", "type", "data", "stringData", "immutable"].includes(key)) {
      findings.push(error([key], `unknown field "${key}"`));
    }
  }
  const pair = CERT_KEYS.find(([c, k]) => values.has(c) || values.has(k));
  const caKey = CA_KEYS.find((k) => values.has(k));
  let certChainPem = "", privateKeyPem = "", caPem = "", notAfter = 0;
  if (pair) {
    const [c, k] = pair;
    const cert = values.get(c), key = values.get(k);
    if (!cert) findings.push(error([key!.at[0], c], `required with ${k}`));
    if (!key) findings.push(error([cert!.at[0], k], `required with ${c}`));
    if (cert && key) {
      const leaf = certificates(cert.text, cert.at, findings)[0];
      const privateKey = privateKeyOf(key.text, key.at, findings);
      if (leaf && privateKey) {
        if (!leaf.checkPrivateKey(privateKey)) {
          findings.push(error(key.at, `the private key does not match the certificate in ${c}`));
        }
        notAfter = Date.parse(leaf.validTo);
        const now = options.now ?? Date.now();
        if (notAfter <= now) findings.push(warning(cert.at, `the certificate expired at ${iso(notAfter)}`));
        else if (Date.parse(leaf.validFrom) > now) {
          findings.push(
            warning(cert.at, `the certificate is not valid before ${iso(Date.parse(leaf.validFrom))}`),
          );
        }
      }
      certChainPem = cert.text;
      privateKeyPem = key.text;
    }
  } else if (type === "kubernetes.io/tls") {
    findings.push(error(["data"], "a kubernetes.io/tls secret needs tls.crt and tls.key"));
  }
  if (caKey) {
    const ca = values.get(caKey)!;
    if (certificates(ca.text, ca.at, findings).length > 0) caPem = ca.text;
  }
  if (!pair && !caKey && !findings.some((f) => f.severity === "error")) {
    findings.push(
      error(
        ["data"],
        "holds no credential: expected tls.crt and tls.key (or cert and key), or ca.crt (or cacert)",
      ),
    );
  }
  if (findings.some((f) => f.severity === "error")) return { findings };
  return {
    findings,
    credential: {
      namespace: typeof meta?.namespace === "string" ? meta.namespace : "default",
      name: name as string,
      certChainPem,
      privateKeyPem,
      caPem,
      notAfter,
    },
  };
}

/**
 * A copy of a Secret document with every private key value replaced by `[redacted]`, for debug
 * endpoints and dumps. Certificates stay: they are public.
 */
export function redactSecret<T>(resource: T): T {
  const doc = asObj(resource);
  if (!doc) return resource;
  const out: Obj = { ...doc };
  for (const field of ["data", "stringData"]) {
    const section = asObj(doc[field]);
    if (!section) continue;
    out[field] = Object.fromEntries(
      Object.entries(section).map(([k, v]) => [k, k === "tls.key" || k === "key" ? "[redacted]" : v]),
    );
  }
  return out as T;
}

function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Obj : undefined;
}

function decodeBase64(raw: string): string | undefined {
  const compact = raw.replace(/\s+/g, "");
  if (!BASE64.test(compact)) return undefined;
  return new TextDecoder().decode(Uint8Array.from(atob(compact), (c) => c.charCodeAt(0)));
}

/** The certificates of a PEM bundle; a finding at `at` when there is none or one does not parse. */
function certificates(pem: string, at: FieldPath, findings: Finding[]): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    findings.push(error(at, "not a PEM certificate: no -----BEGIN CERTIFICATE----- block"));
    return [];
  }
  const out: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      out.push(new X509Certificate(block));
    } catch (e) {
      findings.push(error(at, `PEM certificate ${i + 1} cannot be parsed: ${(e as Error).message}`));
      return [];
    }
  }
  return out;
}

function privateKeyOf(
  pem: string,
  at: FieldPath,
  findings: Finding[],
): ReturnType<typeof createPrivateKey> | undefined {
  if (!/-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.test(pem)) {
    findings.push(error(at, "not a PEM private key: no -----BEGIN PRIVATE KEY----- block"));
    return undefined;
  }
  if (pem.includes("ENCRYPTED PRIVATE KEY")) {
    findings.push(error(at, "the private key is encrypted; gateway credentials need an unencrypted key"));
    return undefined;
  }
  try {
    return createPrivateKey(pem);
  } catch {
    // The parser's message may quote the input; only say that it failed.
    findings.push(error(at, "the PEM private key cannot be parsed"));
    return undefined;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
