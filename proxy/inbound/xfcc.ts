/**
 * X-Forwarded-Client-Cert as an Istio sidecar's Envoy writes it on inbound mutual-TLS requests
 * (`forward_client_cert_details: APPEND_FORWARD`, `set_current_client_cert_details: {subject, uri,
 * dns}`): one element per hop,
 *
 *     By=<each URI SAN of the proxy's certificate>;Hash=<sha256 hex of the client certificate DER>;
 *     Subject="<client subject, RFC 2253>";URI=<each URI SAN of the client certificate>;DNS=<each DNS SAN>
 *
 * (`URI=` stays, empty, when the client certificate has no URI SAN, as in Envoy). The element is
 * appended with `,` to an X-Forwarded-Client-Cert the client sent; without mutual TLS the header is
 * removed. The certificate fields come from the DER here, with a small DER reader, so that nothing
 * depends on how a TLS library formats names.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** The certificate fields the data path needs. */
export interface CertificateFields {
  /** The subject as OpenSSL/BoringSSL print it with XN_FLAG_RFC2253 (what Envoy puts in XFCC). */
  subject: string;
  /** URI subject alternative names, in certificate order. */
  uris: string[];
  /** DNS subject alternative names, in certificate order. */
  dnsNames: string[];
}

/** A DER element: tag, and content `[start, end)`. */
interface Tlv {
  tag: number;
  start: number;
  end: number;
  /** Index of the tag byte. */
  at: number;
}

function readTlv(b: Uint8Array, i: number, limit: number): Tlv {
  if (i + 2 > limit) throw new Error("truncated DER");
  const tag = b[i];
  if ((tag & 0x1f) === 0x1f) throw new Error("multi-byte DER tags are not supported");
  let len = b[i + 1];
  let p = i + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || p + n > limit) throw new Error("invalid DER length");
    len = 0;
    for (let k = 0; k < n; k++) len = len * 256 + b[p + k];
    p += n;
  }
  if (p + len > limit) throw new Error("truncated DER");
  return { tag, start: p, end: p + len, at: i };
}

function children(b: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let i = parent.start; i < parent.end;) {
    const t = readTlv(b, i, parent.end);
    out.push(t);
    i = t.end;
  }
  return out;
}

/**
 * Subject and subject alternative names of a DER X.509 certificate.
 *
 * @throws {Error} when the DER is not a certificate
 */
export function certificateFields(der: Uint8Array): CertificateFields {
  const cert = readTlv(der, 0, der.length);
  if (cert.tag !== 0x30) throw new Error("not a certificate");
  const tbs = readTlv(der, cert.start, cert.end);
  if (tbs.tag !== 0x30) throw new Error("not a certificate");
  const parts = children(der, tbs);
  let k = parts[0]?.tag === 0xa0 ? 1 : 0; // [0] version
  k += 4; // serialNumber, signature, issuer, validity
  const subject = parts[k];
  if (subject === undefined || subject.tag !== 0x30) throw new Error("certificate without subject");
  const uris: string[] = [];
  const dnsNames: string[] = [];
  for (let j = k + 2; j < parts.length; j++) {
    if (parts[j].tag !== 0xa3) continue; // [3] extensions
    const list = readTlv(der, parts[j].start, parts[j].end);
    for (const ext of children(der, list)) {
      const f = children(der, ext);
      if (f.length < 2 || f[0].tag !== 0x06) continue;
      if (oidText(der, f[0]) !== "2.5.29.17") continue;
      const value = f[f.length - 1];
      if (value.tag !== 0x04) continue;
      const names = readTlv(der, value.start, value.end);
      for (const gn of children(der, names)) {
        if (gn.tag === 0x86) uris.push(latin1(der, gn.start, gn.end));
        else if (gn.tag === 0x82) dnsNames.push(latin1(der, gn.start, gn.end));
      }
    }
  }
  return { subject: rfc2253(der, subject), uris, dnsNames };
}

/** OpenSSL's short names of the attribute types it prints by name. */
const SHORT_NAMES: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.4": "SN",
  "2.5.4.5": "serialNumber",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.9": "street",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.12": "title",
  "2.5.4.13": "description",
  "2.5.4.15": "businessCategory",
  "2.5.4.17": "postalCode",
  "2.5.4.42": "GN",
  "2.5.4.43": "initials",
  "2.5.4.44": "generationQualifier",
  "2.5.4.46": "dnQualifier",
  "2.5.4.65": "pseudonym",
  "2.5.4.97": "organizationIdentifier",
  "0.9.2342.19200300.100.1.1": "UID",
  "0.9.2342.19200300.100.1.25": "DC",
  "1.2.840.113549.1.9.1": "emailAddress",
  "1.3.6.1.4.1.311.60.2.1.1": "jurisdictionL",
  "1.3.6.1.4.1.311.60.2.1.2": "jurisdictionST",
  "1.3.6.1.4.1.311.60.2.1.3": "jurisdictionC",
};

const HEX_UPPER = "0123456789ABCDEF";

/**
 * A Name as `X509_NAME_print_ex(..., XN_FLAG_RFC2253)` prints it: attributes last to first, RDNs
 * joined by `,`, the values of a multi-valued RDN by `+`; known types by short name, others as a dotted OID with `#` and the
 * hex DER of the value; string values converted to UTF-8 and escaped (`,+"\<>;` with a backslash,
 * `#` or space first and space last with a backslash, control and non-ASCII bytes as `\XX`).
 */
function rfc2253(der: Uint8Array, name: Tlv): string {
  const rdns = children(der, name);
  const out: string[] = [];
  for (let r = rdns.length - 1; r >= 0; r--) {
    // X509_NAME is a flat list of entries; XN_FLAG_DN_REV reverses it, so the values of a
    // multi-valued RDN come out reversed as well.
    const avas = children(der, rdns[r]).reverse().map((ava) => {
      const [type, value] = children(der, ava);
      const oid = oidText(der, type);
      const short = SHORT_NAMES[oid];
      if (short === undefined) return `${oid}=#${hex(der, value.at, value.end)}`;
      const bytes = stringValueUtf8(der, value);
      if (bytes === null) return `${short}=#${hex(der, value.at, value.end)}`;
      return `${short}=${escapeValue(bytes)}`;
    });
    out.push(avas.join("+"));
  }
  return out.join(",");
}

function hex(b: Uint8Array, s: number, e: number): string {
  let t = "";
  for (let i = s; i < e; i++) t += HEX_UPPER[b[i] >> 4] + HEX_UPPER[b[i] & 15];
  return t;
}

/** The UTF-8 bytes of a directory string, or null for a type that is dumped as DER. */
function stringValueUtf8(b: Uint8Array, v: Tlv): Uint8Array | null {
  const raw = b.subarray(v.start, v.end);
  switch (v.tag) {
    case 0x0c: // UTF8String
      return raw;
    case 0x12: // NumericString
    case 0x13: // PrintableString
    case 0x14: // T61String (read as Latin-1, as OpenSSL does)
    case 0x16: // IA5String
    case 0x1a: // VisibleString
      return new TextEncoder().encode(latin1(b, v.start, v.end));
    case 0x1e: { // BMPString, UCS-2 big-endian
      let t = "";
      for (let i = 0; i + 1 < raw.length; i += 2) t += String.fromCharCode((raw[i] << 8) | raw[i + 1]);
      return new TextEncoder().encode(t);
    }
    case 0x1c: { // UniversalString, UCS-4 big-endian
      let t = "";
      for (let i = 0; i + 3 < raw.length; i += 4) {
        t += String.fromCodePoint(
          ((raw[i] << 24) | (raw[i + 1] << 16) | (raw[i + 2] << 8) | raw[i + 3]) >>> 0,
        );
      }
      return new TextEncoder().encode(t);
    }
    default:
      return null;
  }
}

function escapeValue(bytes: Uint8Array): string {
  let t = "";
  const last = bytes.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = bytes[i];
    if (c >= 0x80 || c < 0x20 || c === 0x7f) {
      t += "\\" + HEX_UPPER[c >> 4] + HEX_UPPER[c & 15];
    } else if (
      c === 0x2c || c === 0x2b || c === 0x22 || c === 0x5c || c === 0x3c || c === 0x3e || c === 0x3b ||
      (i === 0 && (c === 0x23 || c === 0x20)) || (i === last && c === 0x20)
    ) {
      t += "\\" + String.fromCharCode(c);
    } else t += String.fromCharCode(c);
  }
  return t;
}

function oidText(b: Uint8Array, t: Tlv): string {
  const parts: number[] = [];
  let v = 0;
  for (let i = t.start; i < t.end; i++) {
    v = v * 128 + (b[i] & 0x7f);
    if ((b[i] & 0x80) === 0) {
      if (parts.length === 0) {
        const first = v < 40 ? 0 : v < 80 ? 1 : 2;
        parts.push(first, v - first * 40);
      } else parts.push(v);
      v = 0;
    }
  }
  return parts.join(".");
}

function latin1(b: Uint8Array, s: number, e: number): string {
  let t = "";
  for (let i = s; i < e; i++) t += String.fromCharCode(b[i]);
  return t;
}

/** Lowercase hex SHA-256 of a certificate's DER (Envoy's `sha256PeerCertificateDigest`). */
export function certificateHash(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("hex");
}

/** The fields of one XFCC element. */
export interface XfccElement {
  /** URI SANs of the proxy's own certificate. */
  by: string[];
  /** Lowercase hex SHA-256 of the client certificate DER. */
  hash: string;
  subject: string;
  uris: string[];
  dnsNames: string[];
}

/** `By=...;Hash=...;Subject="...";URI=...[;DNS=...]`, in Envoy's order. */
export function formatXfccElement(e: XfccElement): string {
  const parts: string[] = [];
  for (const uri of e.by) parts.push(`By=${headerSafe(uri)}`);
  parts.push(`Hash=${e.hash}`);
  parts.push(`Subject="${headerSafe(e.subject)}"`);
  if (e.uris.length === 0) parts.push("URI=");
  for (const uri of e.uris) parts.push(`URI=${headerSafe(uri)}`);
  for (const dns of e.dnsNames) parts.push(`DNS=${headerSafe(dns)}`);
  return parts.join(";");
}

/** SAN strings are IA5 and could hold control characters: percent-encode what a header cannot carry. */
function headerSafe(text: string): string {
  return text.replace(
    /[^\x20-\x7e]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"),
  );
}
