/**
 * The server's TLS material, made at start: a self-signed ECDSA P-256 CA and a serving certificate
 * it signs for `localhost`, `127.0.0.1`, `::1` and the `kubernetes.default.svc` names (as a cluster's
 * API server certificate has), plus the ES256 key that signs service-account tokens. Made with
 * @peculiar/x509.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import { toPem } from "../../../shared/internal/ca/pem.ts";

const EC = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN = { name: "ECDSA", hash: "SHA-256" };
const DAY = 86_400_000;

/** PEM text of the CA and the serving certificate and key. */
export interface ServerPki {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Extra names (DNS names or IP addresses) to put in the serving certificate besides the defaults. */
export async function makeServerPki(extraNames: string[] = []): Promise<ServerPki> {
  const caKeys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const notBefore = new Date(Date.now() - 3_600_000);
  const notAfter = new Date(Date.now() + 365 * DAY);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=kube-api test CA",
    keys: caKeys,
    signingAlgorithm: EC_SIGN,
    notBefore,
    notAfter,
    serialNumber: "01",
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const dns = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
  ];
  const ips = ["127.0.0.1", "::1"];
  for (const n of extraNames) (/^[\d.]+$|:/.test(n) ? ips : dns).push(n);
  const cert = await x509.X509CertificateGenerator.create({
    subject: "CN=kube-apiserver",
    issuer: ca.subjectName,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: EC_SIGN,
    notBefore,
    notAfter,
    serialNumber: "02",
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...dns.map((value) => ({ type: "dns" as const, value })),
        ...ips.map((value) => ({ type: "ip" as const, value })),
      ]),
    ],
  });
  return {
    caPem: ca.toString("pem") + "\n",
    certPem: cert.toString("pem") + "\n",
    keyPem: toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
  };
}

/** A kubeconfig (YAML is a superset of JSON: written as JSON) for `url` with the CA and a bearer token. */
export function kubeconfigText(url: string, caPem: string, token: string, namespace = "default"): string {
  const b64 = btoa(caPem);
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "kube-api", cluster: { server: url, "certificate-authority-data": b64 } }],
      users: [{ name: "admin", user: { token } }],
      contexts: [{ name: "kube-api", context: { cluster: "kube-api", user: "admin", namespace } }],
      "current-context": "kube-api",
      preferences: {},
    },
    null,
    2,
  ) + "\n";
}
