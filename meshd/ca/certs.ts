/**
 * Small checks on X.509 certificates shared by the root loader, the signer and the authenticator:
 * is it a CA, did this CA sign it, is it valid now, what URI SANs does it carry.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";

/** Parses one certificate from DER or PEM; the error says what `what` was. */
export function parseCertificate(data: Uint8Array | string, what: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(typeof data === "string" ? data : data as Uint8Array<ArrayBuffer>);
  } catch (e) {
    throw new Error(`${what} is not a valid X.509 certificate (${(e as Error).message})`);
  }
}

/** Whether the certificate may sign others: basic constraints `cA` and, if key usage is present, `keyCertSign`. */
export function caProblem(cert: x509.X509Certificate): string | undefined {
  const bc = cert.getExtension(x509.BasicConstraintsExtension);
  if (!bc || !bc.ca) return "is not a CA certificate (basic constraints cA is not set)";
  const ku = cert.getExtension(x509.KeyUsagesExtension);
  if (ku && (ku.usages & x509.KeyUsageFlags.keyCertSign) === 0) {
    return "is not allowed to sign certificates (key usage lacks keyCertSign)";
  }
  return undefined;
}

/** Why the certificate is not valid at `now`, or undefined when it is. */
export function validityProblem(cert: x509.X509Certificate, now: Date): string | undefined {
  if (now.getTime() < cert.notBefore.getTime()) return `is not valid before ${cert.notBefore.toISOString()}`;
  if (now.getTime() > cert.notAfter.getTime()) return `expired on ${cert.notAfter.toISOString()}`;
  return undefined;
}

/** Whether `child` names `parent` as its issuer and carries a signature that `parent`'s key verifies. */
export async function issuedBy(child: x509.X509Certificate, parent: x509.X509Certificate): Promise<boolean> {
  if (child.issuer !== parent.subject) return false;
  try {
    return await child.verify({ publicKey: parent.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

/** The certificate's subject for messages, `(empty subject)` when it has none. */
export function describe(cert: x509.X509Certificate): string {
  return cert.subject === "" ? "(empty subject)" : `"${cert.subject}"`;
}

/** The URI subject alternative names of a certificate or CSR. */
export function uriSans(item: x509.X509Certificate | x509.Pkcs10CertificateRequest): string[] {
  const ext = item.getExtension("2.5.29.17");
  if (!ext) return [];
  const san = ext instanceof x509.SubjectAlternativeNameExtension
    ? ext
    : new x509.SubjectAlternativeNameExtension(ext.rawData);
  return san.names.items.filter((n) => n.type === "url").map((n) => n.value);
}

/** SHA-256 fingerprint of the certificate's DER, lower-case hex. */
export async function fingerprint(cert: x509.X509Certificate): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", cert.rawData));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
