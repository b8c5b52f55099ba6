/**
 * Issuing one leaf certificate from a CSR. Runs inside the signer Worker (see signer_worker.ts),
 * next to the CA key.
 *
 * What goes into a workload certificate comes from the caller's authenticated identity, never from
 * the CSR: the leaf's only name is the URI SAN `spiffe://<trust-domain>/ns/<ns>/sa/<sa>`, its
 * subject is empty, and the CSR contributes its public key alone, after its signature has been
 * verified (proof that the requester holds the private key). A CSR that itself asks for a different
 * SPIFFE ID is refused (`identity_mismatch`), so that an attempt to obtain another identity is
 * visible and counted rather than silently rewritten. Other CSR content (subject, DNS SANs,
 * extensions) is ignored. Key usage is digitalSignature and keyEncipherment, extended key usage
 * serverAuth and clientAuth, as Istio's; NotBefore is set back {@link CLOCK_SKEW_GRACE_MS};
 * NotAfter is `now + ttl`, clamped to the NotAfter of every certificate above it.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import { isIP } from "node:net";
import { parseSpiffeId } from "../../shared/identity/mod.ts";
import { uriSans } from "./certs.ts";
import { MIN_RSA_BITS } from "./keys.ts";
import { parsePemBlocks } from "../../shared/internal/ca/pem.ts";
import { CLOCK_SKEW_GRACE_MS, type LoadedCa, randomSerial } from "./root_ca.ts";

/** Largest CSR accepted, in characters of PEM. */
export const MAX_CSR_CHARS = 32 * 1024;

/** What to certify. Exactly one of `spiffeId` (a workload) or `dnsNames`/`ipAddresses` (a server of meshd). */
export interface LeafRequest {
  /** The CSR in PEM (`CERTIFICATE REQUEST`). */
  csrPem: string;
  /** The authenticated workload identity. */
  spiffeId?: string;
  /** DNS names of a meshd serving certificate. */
  dnsNames?: string[];
  /** IP addresses of a meshd serving certificate. */
  ipAddresses?: string[];
  /** Lifetime in seconds, already defaulted and capped by the caller; positive. */
  ttlSeconds: number;
  /** The current time; for tests. */
  now?: Date;
}

/**
 * Why a leaf was not issued: `parse` (the CSR is malformed, its signature does not verify, or its key
 * is unsupported), `identity_mismatch` (the CSR asks for another SPIFFE ID), `bad_request` (the
 * request itself is malformed), `sign` (signing failed).
 */
export type SignErrorKind = "parse" | "identity_mismatch" | "bad_request" | "sign";

/** A refused or failed signing, with a stable kind. */
export class SignError extends Error {
  /** The machine-readable kind. */
  readonly kind: SignErrorKind;

  /**
   * Creates the error; its `name` is `SignError`.
   *
   * @param kind the machine-readable kind
   * @param message the explanation
   */
  constructor(kind: SignErrorKind, message: string) {
    super(message);
    this.kind = kind;
    this.name = "SignError";
  }
}

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

function parseCsr(csrPem: string): x509.Pkcs10CertificateRequest {
  if (typeof csrPem !== "string" || csrPem.length === 0) throw new SignError("parse", "the CSR is empty");
  if (csrPem.length > MAX_CSR_CHARS) {
    throw new SignError(
      "parse",
      `the CSR is ${csrPem.length} characters; at most ${MAX_CSR_CHARS} are accepted`,
    );
  }
  let blocks;
  try {
    blocks = parsePemBlocks(csrPem);
  } catch (e) {
    throw new SignError("parse", `the CSR is not valid PEM (${(e as Error).message})`);
  }
  const csrs = blocks.filter((b) =>
    b.label === "CERTIFICATE REQUEST" || b.label === "NEW CERTIFICATE REQUEST"
  );
  if (csrs.length !== 1 || blocks.length !== 1) {
    throw new SignError("parse", "the CSR must be exactly one PEM CERTIFICATE REQUEST block");
  }
  try {
    return new x509.Pkcs10CertificateRequest(csrs[0].der as Uint8Array<ArrayBuffer>);
  } catch (e) {
    throw new SignError("parse", `the CSR is not a PKCS #10 request (${(e as Error).message})`);
  }
}

function checkPublicKey(csr: x509.Pkcs10CertificateRequest): void {
  let alg: Algorithm & { namedCurve?: string; modulusLength?: number };
  try {
    alg = csr.publicKey.algorithm;
  } catch (e) {
    throw new SignError("parse", `the CSR's public key is not understood (${(e as Error).message})`);
  }
  if (alg.name === "ECDSA" && (alg.namedCurve === "P-256" || alg.namedCurve === "P-384")) return;
  if (alg.name === "RSASSA-PKCS1-v1_5" || alg.name === "RSA-PSS") {
    const bits = alg.modulusLength ?? 0;
    if (bits >= MIN_RSA_BITS) return;
    throw new SignError("parse", `the CSR's RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are required`);
  }
  throw new SignError(
    "parse",
    `the CSR's key (${alg.name}${alg.namedCurve ? ` ${alg.namedCurve}` : ""}) is not supported; ` +
      "use ECDSA P-256 (or P-384, or RSA of 2048 bits or more)",
  );
}

function subjectNames(req: LeafRequest): x509.JsonGeneralNames {
  const hasWorkload = req.spiffeId !== undefined;
  const hasServer = (req.dnsNames?.length ?? 0) + (req.ipAddresses?.length ?? 0) > 0;
  if (hasWorkload === hasServer) {
    throw new SignError(
      "bad_request",
      "a leaf needs either a SPIFFE ID or DNS names / IP addresses, not both",
    );
  }
  if (hasWorkload) {
    try {
      parseSpiffeId(req.spiffeId!);
    } catch (e) {
      throw new SignError("bad_request", `not a workload SPIFFE ID: ${(e as Error).message}`);
    }
    return [{ type: "url", value: req.spiffeId! }];
  }
  const names: x509.JsonGeneralNames = [];
  for (const d of req.dnsNames ?? []) {
    if (!DNS_NAME.test(d)) throw new SignError("bad_request", `"${d}" is not a lower-case DNS name`);
    names.push({ type: "dns", value: d });
  }
  for (const ip of req.ipAddresses ?? []) {
    if (isIP(ip) === 0) throw new SignError("bad_request", `"${ip}" is not an IP address`);
    names.push({ type: "ip", value: ip });
  }
  return names;
}

/**
 * Verifies the CSR and issues the leaf.
 *
 * @returns the chain for the response: the leaf, the intermediates (signing certificate first), and
 *   the root bundle last; each a PEM string ending in a newline
 * @throws {SignError}
 */
export async function issueLeaf(ca: LoadedCa, req: LeafRequest): Promise<string[]> {
  if (!Number.isInteger(req.ttlSeconds) || req.ttlSeconds <= 0) {
    throw new SignError("bad_request", `ttlSeconds must be a positive integer; got ${req.ttlSeconds}`);
  }
  const names = subjectNames(req);
  const csr = parseCsr(req.csrPem);
  let valid = false;
  try {
    valid = await csr.verify();
  } catch (e) {
    throw new SignError("parse", `the CSR's signature cannot be checked (${(e as Error).message})`);
  }
  if (!valid) throw new SignError("parse", "the CSR's signature does not verify against its public key");
  checkPublicKey(csr);
  if (req.spiffeId !== undefined) {
    const asked = uriSans(csr).filter((u) => u !== req.spiffeId);
    if (asked.length > 0) {
      throw new SignError(
        "identity_mismatch",
        `the CSR asks for ${asked.join(", ")}, but the caller is ${req.spiffeId}`,
      );
    }
  }

  const now = (req.now ?? new Date()).getTime();
  if (ca.chain.some((c) => c.notAfter.getTime() <= now)) {
    throw new SignError("sign", "a certificate of the CA chain has expired");
  }
  const notAfter = Math.min(now + req.ttlSeconds * 1000, ...ca.chain.map((c) => c.notAfter.getTime()));
  const ski = ca.signingCert.getExtension(x509.SubjectKeyIdentifierExtension);
  try {
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: [],
      issuer: ca.signingCert.subjectName,
      notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
      notAfter: new Date(notAfter),
      publicKey: csr.publicKey,
      signingKey: ca.signingKey.key,
      signingAlgorithm: ca.signingKey.algorithm,
      extensions: [
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new x509.ExtendedKeyUsageExtension([
          x509.ExtendedKeyUsage.serverAuth,
          x509.ExtendedKeyUsage.clientAuth,
        ]),
        new x509.BasicConstraintsExtension(false, undefined, true),
        ski
          ? new x509.AuthorityKeyIdentifierExtension(ski.keyId)
          : await x509.AuthorityKeyIdentifierExtension.create(ca.signingCert.publicKey),
        // Critical because the subject is empty (RFC 5280, 4.2.1.6).
        new x509.SubjectAlternativeNameExtension(names, true),
      ],
    });
    return [leaf.toString("pem") + "\n", ...ca.bundle.intermediatePems, ca.bundle.rootCertPem];
  } catch (e) {
    throw new SignError("sign", `signing failed (${(e as Error).message})`);
  }
}
