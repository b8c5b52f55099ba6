/**
 * The two X.509 jobs of the agent, on the narrow libraries: a PKCS #10 CSR (RFC 2986) built with
 * @peculiar/asn1-csr and @peculiar/asn1-x509 (the ASN.1 schemas @peculiar/x509 is made of, without
 * its dependency-injection container, RSA, CMS and PKCS #9 parts), and certificates read with
 * node:crypto's `X509Certificate` (Deno's native parser: key, validity, signature) plus
 * @peculiar/asn1-x509 for the exact URI SANs. Loaded by `certificate_manager.ts` with the first CSR;
 * it costs the main isolate less than half of what @peculiar/x509 did (README.md, "Memory").
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  Attribute,
  Certificate,
  Extension,
  Extensions,
  GeneralName,
  id_ce_subjectAltName,
  Name,
  SubjectAlternativeName,
  SubjectPublicKeyInfo,
} from "@peculiar/asn1-x509";
import { Attributes, CertificationRequest, CertificationRequestInfo } from "@peculiar/asn1-csr";
import { ECDSASigValue, ecdsaWithSHA256 } from "@peculiar/asn1-ecc";

/** PKCS #9 extensionRequest (RFC 2985 5.4.2): the CSR attribute that carries the extensions. */
const EXTENSION_REQUEST = "1.2.840.113549.1.9.14";

/**
 * A DER INTEGER's content for an unsigned big-endian value (an ECDSA r or s): leading zero bytes
 * dropped, one 0x00 put back when the first byte has its high bit set (else it would read negative).
 */
export function unsignedInteger(bytes: Uint8Array): ArrayBuffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const trimmed = bytes.slice(i);
  if (trimmed[0] < 0x80) return trimmed.buffer;
  const out = new Uint8Array(trimmed.length + 1);
  out.set(trimmed, 1);
  return out.buffer;
}

/**
 * The DER of a CSR with an empty subject and `spiffeId` as its one URI SAN (extensionRequest, not
 * critical), signed ECDSA with SHA-256 by `keys` (P-256, WebCrypto).
 */
export async function csrDer(spiffeId: string, keys: CryptoKeyPair): Promise<Uint8Array> {
  const san = new SubjectAlternativeName([new GeneralName({ uniformResourceIdentifier: spiffeId })]);
  const extensions = new Extensions([
    new Extension({
      extnID: id_ce_subjectAltName,
      critical: false,
      extnValue: new OctetString(AsnConvert.serialize(san)),
    }),
  ]);
  const info = new CertificationRequestInfo({
    version: 0,
    subject: new Name(),
    subjectPKInfo: AsnConvert.parse(
      await crypto.subtle.exportKey("spki", keys.publicKey),
      SubjectPublicKeyInfo,
    ),
    attributes: new Attributes([
      new Attribute({ type: EXTENSION_REQUEST, values: [AsnConvert.serialize(extensions)] }),
    ]),
  });
  const tbs = AsnConvert.serialize(info);
  // WebCrypto signs as r || s (IEEE P1363); X.509 wants ECDSA-Sig-Value (RFC 3279 2.2.3).
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs),
  );
  const half = raw.length / 2;
  const signature = AsnConvert.serialize(
    new ECDSASigValue({ r: unsignedInteger(raw.subarray(0, half)), s: unsignedInteger(raw.subarray(half)) }),
  );
  return new Uint8Array(AsnConvert.serialize(
    new CertificationRequest({
      certificationRequestInfo: info,
      signatureAlgorithm: ecdsaWithSHA256,
      signature,
    }),
  ));
}

/** What the agent reads from a certificate. */
export interface ParsedCertificate {
  /** SubjectPublicKeyInfo, DER. */
  spki: Uint8Array;
  /** The URI SANs, in order. */
  uris: string[];
  /** Validity, ms since the epoch. */
  notBefore: number;
  notAfter: number;
  /** Whether `issuer`'s key verifies this certificate's signature (the signature only). */
  signedBy(issuer: ParsedCertificate): boolean;
}

/**
 * Reads one PEM certificate.
 *
 * @throws Error when `pem` is not a certificate Deno's parser and the X.509 schema both accept
 */
export function parseCertificate(pem: string): ParsedCertificate {
  const native = new X509Certificate(pem);
  const asn = AsnConvert.parse(native.raw, Certificate);
  const sanExtension = asn.tbsCertificate.extensions?.find((e) => e.extnID === id_ce_subjectAltName);
  // Array.from: map() on the schema's array class would build another SubjectAlternativeName.
  const uris = sanExtension
    ? Array.from(
      AsnConvert.parse(sanExtension.extnValue, SubjectAlternativeName),
      (n) => n.uniformResourceIdentifier,
    )
      .filter((u): u is string => u !== undefined)
    : [];
  const spki = new Uint8Array(native.publicKey.export({ type: "spki", format: "der" }));
  const parsed: ParsedCertificate & { native: X509Certificate } = {
    native,
    spki,
    uris,
    notBefore: native.validFromDate.getTime(),
    notAfter: native.validToDate.getTime(),
    signedBy: (issuer) => {
      try {
        return native.verify((issuer as typeof parsed).native.publicKey);
      } catch {
        return false;
      }
    },
  };
  return parsed;
}
