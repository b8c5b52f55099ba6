/**
 * Helpers for the tests of this folder: temporary directories, workload CSRs, plugged-in CA
 * material made with @peculiar/x509, and a gRPC client of mesh.v1.CertificateService. Not used by
 * meshd itself.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as x509 from "@peculiar/x509";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { certificateProtocol } from "./ca_service.ts";
import { CertificateAuthority, type CertificateAuthorityOptions } from "./mod.ts";
import { toPem } from "../../shared/internal/ca/pem.ts";

/** The DNS name in meshd's serving certificate in these tests. */
export const SERVER_NAME = "meshd.mesh-system.svc";

const HOUR = 3_600_000;

/** Waits until `cond()` holds, polling every 20 ms; resolves to the ms it took. */
export async function waitFor(cond: () => boolean, timeoutMs: number, what = "condition"): Promise<number> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

/** A started CA on a temp ROOT_CA_DIR that allows short certificates (validity_duration from 1 s); `extra` options win. */
export async function startCa(
  rootCaDir: string,
  extra: Partial<CertificateAuthorityOptions> = {},
): Promise<CertificateAuthority> {
  const ca = new CertificateAuthority();
  await ca.start({
    rootCaDir,
    trustDomain: "cluster.local",
    selfSignedRsaKeySize: 2048,
    selfSignedTtlMs: 24 * HOUR,
    defaultTtlMs: HOUR,
    maxTtlMs: 24 * HOUR,
    tokenAudiences: "mesh-ca",
    ...extra,
  });
  return ca;
}

/** A temporary directory removed by the returned function. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "meshd-ca-test-" });
  return { dir, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

/** A workload key pair and CSR. */
export interface TestCsr {
  csrPem: string;
  keys: CryptoKeyPair;
  privateKeyPem: string;
}

/** Makes an ECDSA P-256 key and a CSR asking for the given names (none by default). */
export async function makeCsr(
  opts: { subject?: string; uris?: string[]; dnsNames?: string[]; keys?: CryptoKeyPair } = {},
): Promise<TestCsr> {
  const keys = opts.keys ??
    await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const names: x509.JsonGeneralNames = [
    ...(opts.uris ?? []).map((value) => ({ type: "url" as const, value })),
    ...(opts.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
  ];
  const alg = keys.privateKey.algorithm.name === "ECDSA"
    ? { name: "ECDSA", hash: "SHA-256" }
    : { name: "RSASSA-PKCS1-v1_5" };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: opts.subject ?? "",
    keys,
    signingAlgorithm: alg,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return {
    csrPem: csr.toString("pem"),
    keys,
    privateKeyPem: toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
  };
}

/** A CA certificate with its key. */
export interface TestCa {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  pem: string;
  keyPem: string;
}

const EC = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN = { name: "ECDSA", hash: "SHA-256" };

/** A CA certificate: self-signed when `issuer` is absent, else signed by it. */
export async function makeCa(
  name: string,
  opts: { issuer?: TestCa; isCa?: boolean; notBefore?: Date; notAfter?: Date } = {},
): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const extensions = [
    new x509.BasicConstraintsExtension(opts.isCa ?? true, undefined, true),
    new x509.KeyUsagesExtension(
      (opts.isCa ?? true)
        ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
        : x509.KeyUsageFlags.digitalSignature,
      true,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  const notBefore = opts.notBefore ?? new Date(Date.now() - 3600_000);
  const notAfter = opts.notAfter ?? new Date(Date.now() + 365 * 86400_000);
  const cert = opts.issuer
    ? await x509.X509CertificateGenerator.create({
      subject: `CN=${name}`,
      issuer: opts.issuer.cert.subjectName,
      publicKey: keys.publicKey,
      signingKey: opts.issuer.keys.privateKey,
      signingAlgorithm: EC_SIGN,
      notBefore,
      notAfter,
      extensions,
    })
    : await x509.X509CertificateGenerator.createSelfSigned({
      name: `CN=${name}`,
      keys,
      signingAlgorithm: EC_SIGN,
      notBefore,
      notAfter,
      extensions,
    });
  return {
    cert,
    keys,
    pem: cert.toString("pem") + "\n",
    keyPem: toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
  };
}

/** Writes Istio-style cacerts: an intermediate `ca-cert.pem` issued by `root`. */
export async function writeCacerts(
  dir: string,
  files: { caCert: string; caKey: string; certChain: string; rootCert: string },
): Promise<void> {
  await Deno.writeTextFile(join(dir, "ca-cert.pem"), files.caCert);
  await Deno.writeTextFile(join(dir, "ca-key.pem"), files.caKey, { mode: 0o600 });
  await Deno.chmod(join(dir, "ca-key.pem"), 0o600);
  await Deno.writeTextFile(join(dir, "cert-chain.pem"), files.certChain);
  await Deno.writeTextFile(join(dir, "root-cert.pem"), files.rootCert);
}

/** A root and an intermediate, and the cacerts files for them (cert-chain.pem = intermediate + root). */
export async function pluggedInCa(dir: string): Promise<{ root: TestCa; intermediate: TestCa }> {
  const root = await makeCa("Test Root CA");
  const intermediate = await makeCa("Test Intermediate CA", { issuer: root });
  await writeCacerts(dir, {
    caCert: intermediate.pem,
    caKey: intermediate.keyPem,
    certChain: intermediate.pem + root.pem,
    rootCert: root.pem,
  });
  return { root, intermediate };
}

/** A client of mesh.v1.CertificateService over TLS, optionally presenting a client certificate. */
export function certificateClient(
  port: number,
  trustBundlePem: string,
  clientCert?: { certChainPem: string; privateKeyPem: string },
): grpc.Client {
  const creds = grpc.credentials.createSsl(
    Buffer.from(trustBundlePem),
    clientCert ? Buffer.from(clientCert.privateKeyPem) : null,
    clientCert ? Buffer.from(clientCert.certChainPem) : null,
  );
  return new (certificateProtocol().client)(`127.0.0.1:${port}`, creds, {
    "grpc.ssl_target_name_override": SERVER_NAME,
    "grpc.default_authority": SERVER_NAME,
  });
}

/** Calls CreateCertificate; resolves with the response or the gRPC error. */
export function createCertificate(
  client: grpc.Client,
  request: { csr: string; validityDuration?: number; metadata?: Record<string, string> },
  token?: string,
): Promise<{ certChain: string[] } | grpc.ServiceError> {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set("authorization", `Bearer ${token}`);
  return new Promise((resolve) => {
    // deno-lint-ignore no-explicit-any
    (client as any).createCertificate(
      { validityDuration: 0, metadata: {}, ...request },
      md,
      { deadline: Date.now() + 10_000 },
      (err: grpc.ServiceError | null, res: { certChain: string[] }) => resolve(err ?? res),
    );
  });
}

/** Binds `server` on 127.0.0.1 with an ephemeral port. */
export function bind(server: grpc.Server, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", creds, (err, port) => (err ? reject(err) : resolve(port)))
  );
}
