/**
 * A test CA and workload certificates made with @peculiar/x509, for the tests of several programs
 * (the HTTP/2 codec's TLS tests, the proxy's inbound tests, meshd's gRPC server). Not used by any
 * program itself.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import { Buffer } from "node:buffer";

const EC = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN = { name: "ECDSA", hash: "SHA-256" };

function pem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** A CA: certificate and key. */
export interface TestCa {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  pem: string;
}

/** A self-signed CA. */
export async function makeCa(name: string): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: EC_SIGN,
    notBefore: new Date(Date.now() - 3600_000),
    notAfter: new Date(Date.now() + 86400_000),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, pem: cert.toString("pem") + "\n" };
}

/** A leaf certificate: PEM, key PEM and DER. */
export interface TestLeaf {
  certPem: string;
  keyPem: string;
  der: Uint8Array;
}

/** A workload certificate issued by `ca` (Istio's have an empty subject and only a URI SAN). */
export async function makeLeaf(
  ca: TestCa,
  opts: { uris?: string[]; dnsNames?: string[]; ips?: string[]; subject?: string | x509.JsonName } = {},
): Promise<TestLeaf> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const names: x509.JsonGeneralNames = [
    ...(opts.uris ?? []).map((value) => ({ type: "url" as const, value })),
    ...(opts.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: crypto.getRandomValues(new Uint8Array(8)).reduce(
      (s, b) => s + b.toString(16).padStart(2, "0"),
      "01",
    ),
    subject: opts.subject ?? "",
    issuer: ca.cert.subjectName,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: EC_SIGN,
    notBefore: new Date(Date.now() - 120_000),
    notAfter: new Date(Date.now() + 86400_000),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      new x509.SubjectAlternativeNameExtension(names, false),
    ],
  });
  return {
    certPem: cert.toString("pem") + "\n",
    keyPem: pem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
    der: new Uint8Array(cert.rawData),
  };
}
