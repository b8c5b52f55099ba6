/**
 * CA private keys: reading them from PEM in any of the usual encodings (PKCS#8 `PRIVATE KEY`,
 * PKCS#1 `RSA PRIVATE KEY`, SEC 1 `EC PRIVATE KEY`, as `openssl` and Istio's cacerts tooling write
 * them) into a non-extractable WebCrypto signing key, and checking that a key belongs to a
 * certificate. node:crypto parses the encodings; WebCrypto signs.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import { toPem } from "../../shared/internal/ca/pem.ts";

/** The signature algorithms a CA key of each supported kind signs with. */
export type SigningAlgorithm =
  | { name: "RSASSA-PKCS1-v1_5"; hash: "SHA-256" }
  | { name: "ECDSA"; hash: "SHA-256" | "SHA-384" };

/** A CA private key ready to sign certificates. */
export interface SigningKey {
  /** Non-extractable WebCrypto key, usage `sign` only. */
  key: CryptoKey;
  /** The algorithm to pass as `signingAlgorithm` when signing with it. */
  algorithm: SigningAlgorithm;
  /** `rsa-2048`, `ec-P-256`, ...: for messages. */
  description: string;
}

/** Minimum RSA modulus accepted for CA keys and workload keys. */
export const MIN_RSA_BITS = 2048;

/**
 * Parses a private key in PEM; `extractable` stays false so that the key material cannot leave the
 * WebCrypto key once imported.
 *
 * @throws {Error} with a one-line reason for an unreadable, encrypted or unsupported key
 */
export async function importSigningKey(pem: string): Promise<SigningKey> {
  let obj: KeyObject;
  try {
    obj = createPrivateKey({ key: pem, format: "pem" });
  } catch (e) {
    const msg = (e as Error).message;
    if (/passphrase|encrypted/i.test(msg) || pem.includes("ENCRYPTED")) {
      throw new Error("the key is encrypted; store it unencrypted (mode 0600) as Istio's cacerts does");
    }
    throw new Error(`not a readable PEM private key (${msg})`);
  }
  const der = obj.export({ type: "pkcs8", format: "der" });
  const pkcs8 = new Uint8Array(der.buffer, der.byteOffset, der.byteLength) as Uint8Array<ArrayBuffer>;
  const kind = obj.asymmetricKeyType;
  if (kind === "rsa") {
    const bits = obj.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) {
      throw new Error(`RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are required`);
    }
    const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;
    const key = await crypto.subtle.importKey("pkcs8", pkcs8, algorithm, false, ["sign"]);
    return { key, algorithm, description: `rsa-${bits}` };
  }
  if (kind === "ec") {
    const curve = obj.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === "prime256v1" || curve === "P-256"
      ? "P-256"
      : curve === "secp384r1" || curve === "P-384"
      ? "P-384"
      : undefined;
    if (namedCurve === undefined) {
      throw new Error(`EC key on curve ${curve}; only P-256 and P-384 are supported`);
    }
    const key = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDSA", namedCurve }, false, ["sign"]);
    const hash = namedCurve === "P-256" ? "SHA-256" : "SHA-384";
    return { key, algorithm: { name: "ECDSA", hash }, description: `ec-${namedCurve}` };
  }
  throw new Error(
    `${kind ?? "unknown"} keys are not supported; use RSA (2048 bits or more) or ECDSA P-256/P-384`,
  );
}

/** Whether the private key in `keyPem` is the one whose public key `certPem` certifies. */
export function keyMatchesCertificate(keyPem: string, certPem: string): boolean {
  const cert = new X509Certificate(certPem);
  const fromKey = createPublicKey(createPrivateKey({ key: keyPem, format: "pem" }));
  return cert.publicKey.equals(fromKey);
}

/** PKCS#8 PEM of a WebCrypto private key (which must be extractable). */
export async function exportPkcs8Pem(key: CryptoKey): Promise<string> {
  return toPem(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY");
}
