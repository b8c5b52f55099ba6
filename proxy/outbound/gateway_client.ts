/**
 * The client of a MUTUAL gateway server (Istio's `tls.mode: MUTUAL`): after node:tls verified its chain
 * against the server's CA, its certificate must carry one of the server's `subjectAltNames` (when set),
 * as Envoy's `match_typed_subject_alt_names`; it then gives the request principal and the
 * X-Forwarded-Client-Cert element (Hash, Subject, URI, DNS) every request on the connection carries.
 *
 * @module
 */
import type tls from "node:tls";
import { ascii } from "../http/chars.ts";
import { peerSans } from "./gateway_tls.ts";
import { certificateFields, certificateHash, formatXfccElement } from "../inbound/xfcc.ts";

/** A verified client: its SPIFFE ID (if its certificate has one) and its XFCC element (ASCII bytes). */
export interface GatewayClient {
  principal: string | undefined;
  xfcc: Uint8Array;
}

/** Why a client is turned away: the log message and its reason. */
export interface GatewayClientRefusal {
  message: "gateway TLS handshake failed" | "gateway TLS connection refused";
  reason: string;
}

/**
 * Checks the client of a secured MUTUAL connection.
 *
 * @param socket the server-side TLS socket, after its `secure` event
 * @param subjectAltNames the server's accepted SANs (empty: any certificate the CA signed)
 * @returns the client, or the refusal (no or unverified certificate; none of the SANs)
 */
export function gatewayClient(
  socket: tls.TLSSocket,
  subjectAltNames: readonly string[],
): GatewayClient | GatewayClientRefusal {
  const cert = socket.getPeerCertificate(true);
  if (!socket.authorized || cert?.raw === undefined) {
    return {
      message: "gateway TLS handshake failed",
      reason: String(socket.authorizationError ?? "no client certificate"),
    };
  }
  const sans = peerSans(cert.subjectaltname);
  if (subjectAltNames.length > 0 && !sans.all.some((s) => subjectAltNames.includes(s))) {
    return {
      message: "gateway TLS connection refused",
      reason: `client certificate has none of the SANs ${subjectAltNames.join(", ")}`,
    };
  }
  const der = new Uint8Array(cert.raw);
  const fields = certificateFields(der);
  return {
    principal: sans.uris.find((u) => u.startsWith("spiffe://")),
    xfcc: ascii(formatXfccElement({
      by: [],
      hash: certificateHash(der),
      subject: fields.subject,
      uris: fields.uris,
      dnsNames: fields.dnsNames,
    })),
  };
}
