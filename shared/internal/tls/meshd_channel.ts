/**
 * gRPC channel credentials towards meshd's secure port (--secureGRPCAddr), with the roots always
 * given explicitly (never GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: see /work/shared/platform.md), and an
 * optional client certificate (the workload certificate, for renewal and for ADS).
 *
 * Server identity: with `serverName` the server certificate must name it (a DNS SAN, as
 * `meshd.mesh-system.svc`), whatever address is dialled. Without it the dialled host must be in the
 * certificate: a DNS name as usual, and an IP address against the certificate's IP SANs. The IP case
 * needs care under Deno, whose node:tls refuses an IP as TLS server name (SNI), which grpc-js would
 * otherwise send: the SNI becomes a fixed placeholder and the IP is checked by our own
 * checkServerIdentity.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { meshdIdentity, type PemCertificate } from "./meshd_roots.ts";

export { hostOf, IP_TARGET_SNI, meshdRoots } from "./meshd_roots.ts";

/** What to dial and how to verify it. */
export interface ChannelSecurity {
  /** PEM roots that meshd's serving certificate must chain to. */
  rootsPem: string;
  /** The workload certificate to present: PEM chain (leaf first) and PKCS #8 key. */
  clientCertificate?: PemCertificate;
  /** The name meshd's certificate must carry; default: the dialled host. */
  serverName?: string;
}

/** Credentials and channel options for `new Client(address, credentials, options)`. */
export interface SecureChannel {
  credentials: grpc.ChannelCredentials;
  options: grpc.ChannelOptions;
}

/** Secure channel credentials for `address`. */
export function secureChannel(address: string, security: ChannelSecurity): SecureChannel {
  if (!security.rootsPem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new Error("the roots to verify meshd must be PEM certificates");
  }
  const cert = security.clientCertificate;
  const identity = meshdIdentity(address, security.serverName);
  const options: grpc.ChannelOptions = {};
  let verify: grpc.VerifyOptions = {};
  if (security.serverName) {
    options["grpc.ssl_target_name_override"] = security.serverName;
    options["grpc.default_authority"] = security.serverName;
  } else if (identity.checkServerIdentity) {
    options["grpc.ssl_target_name_override"] = identity.servername;
    verify = { checkServerIdentity: identity.checkServerIdentity };
  }
  const credentials = grpc.credentials.createSsl(
    Buffer.from(security.rootsPem),
    cert ? Buffer.from(cert.privateKeyPem) : null,
    cert ? Buffer.from(cert.certChainPem) : null,
    verify,
  );
  return { credentials, options };
}
