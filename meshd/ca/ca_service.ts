/**
 * `mesh.v1.CertificateService/CreateCertificate` (shared/proto/mesh/v1/ca.proto), after Istio's
 * IstioCertificateService: authenticate the caller, sign the CSR for the caller's identity with
 * the requested lifetime (defaulted and capped), answer with the chain, leaf first and root last.
 *
 * Credentials: `authorization: Bearer <jwt>` call metadata, or the peer certificate of a mutual-TLS
 * connection (`call.getAuthContext().sslPeerCertificate`, present only when the TLS layer verified
 * it against the mesh's roots; see server_credentials.ts).
 *
 * Status codes: UNAUTHENTICATED for a missing or bad credential (the reason goes to the hooks, not
 * to the caller, as Istio's opaque "request authenticate failure"); PERMISSION_DENIED when the CSR
 * asks for another identity; INVALID_ARGUMENT for a malformed CSR; INTERNAL when signing fails;
 * UNAVAILABLE when the signer is down.
 *
 * Counters are hooks, so that meshd's metrics count ca_server_* without this module knowing
 * prom-client: every request calls `onCsr` first and then exactly one of `onSuccess`,
 * `onAuthFailure`, `onParseError` or `onSignError`; `onIdExtractionError` is called in addition to
 * `onAuthFailure` when a credential verified but held no usable identity.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { X509Certificate } from "node:crypto";
import { fileURLToPath } from "node:url";
import { formatSpiffeId } from "../../shared/identity/mod.ts";
import type { AuthMethod, AuthResult, CallerIdentity, Credentials } from "./authenticate.ts";
import { SignError } from "./leaf_cert.ts";

/** Observers for the ca_server_* metrics and for logs; all optional. */
export interface CaServiceHooks {
  /** A request arrived (ca_server_csr_count). */
  onCsr?(): void;
  /** The caller was refused (ca_server_authentication_failure_count); `reason` is for logs only. */
  onAuthFailure?(reason: string): void;
  /** A credential verified but held no usable identity (ca_server_id_extraction_err_count). */
  onIdExtractionError?(reason: string): void;
  /** The CSR could not be parsed or verified (ca_server_csr_parsing_err_count). */
  onParseError?(reason: string): void;
  /** Signing failed (ca_server_csr_sign_err_count). */
  onSignError?(reason: string): void;
  /** A certificate was issued (ca_server_success_cert_issuance_count). */
  onSuccess?(issued: { spiffeId: string; method: AuthMethod; notAfter: Date }): void;
}

/** What the service needs. */
export interface CaServiceDeps {
  /** Verifies the request's credentials. */
  authenticate(cred: Credentials): Promise<AuthResult>;
  /** Signs a CSR for a SPIFFE ID; rejects with a {@link SignError} when refused. */
  sign(req: { csrPem: string; spiffeId: string; ttlSeconds: number }): Promise<string[]>;
  /** DEFAULT_WORKLOAD_CERT_TTL, ms. */
  defaultTtlMs: number;
  /** MAX_WORKLOAD_CERT_TTL, ms. */
  maxTtlMs: number;
  /** The trust domain of issued identities. */
  trustDomain: string;
  /** Counters and logs. */
  hooks?: CaServiceHooks;
}

/** The metadata key of Istio's node impersonation, refused here. */
export const IMPERSONATED_IDENTITY_KEY = "ImpersonatedIdentity";

/** Why {@link IMPERSONATED_IDENTITY_KEY} is refused (CA_TRUSTED_NODE_ACCOUNTS has no effect). */
export const NODE_AUTHENTICATION_ABSENT =
  "node authentication (CA_TRUSTED_NODE_ACCOUNTS) is for node proxies that request certificates for the " +
  "pods on their node (Istio's ztunnel, ambient mode), which this mesh does not have";

/**
 * The lifetime to sign for: DEFAULT_WORKLOAD_CERT_TTL when none (zero or negative) is asked for,
 * capped at MAX_WORKLOAD_CERT_TTL. Whole seconds, at least 1.
 */
export function effectiveTtlSeconds(
  requestedSeconds: number,
  defaultTtlMs: number,
  maxTtlMs: number,
): number {
  const maxS = Math.max(1, Math.floor(maxTtlMs / 1000));
  const defS = Math.max(1, Math.floor(defaultTtlMs / 1000));
  const asked = Number.isFinite(requestedSeconds) && requestedSeconds > 0
    ? Math.floor(requestedSeconds)
    : defS;
  return Math.max(1, Math.min(asked, maxS));
}

/** The service definition and client constructor of mesh.v1.CertificateService. */
export interface CertificateProtocol {
  /** Service definition for `server.addService`. */
  service: grpc.ServiceDefinition;
  /** Client constructor for `new client(address, credentials)`. */
  client: grpc.ServiceClientConstructor;
}

let loaded: CertificateProtocol | undefined;

/** Loads ca.proto (once per process). */
export function certificateProtocol(): CertificateProtocol {
  if (loaded) return loaded;
  const file = fileURLToPath(new URL("../../shared/proto/mesh/v1/ca.proto", import.meta.url));
  const definition = protoLoader.loadSync(file, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  // deno-lint-ignore no-explicit-any
  const ctor = (grpc.loadPackageDefinition(definition) as any).mesh.v1
    .CertificateService as grpc.ServiceClientConstructor;
  loaded = { service: ctor.service, client: ctor };
  return loaded;
}

/**
 * A CreateCertificate request (shared/proto/mesh/v1/ca.proto) as proto-loader decodes it with
 * `defaults: true` and `longs: Number`: every field present, `validityDuration` in seconds.
 */
interface CertificateRequest {
  csr: string;
  validityDuration: number;
  metadata: Record<string, string>;
}

function credentialsOf(call: grpc.ServerUnaryCall<CertificateRequest, unknown>): Credentials {
  const cred: Credentials = {};
  const auth = call.metadata.get("authorization");
  if (auth.length > 0) cred.authorization = String(auth[0]);
  const peer = call.getAuthContext?.().sslPeerCertificate;
  if (peer?.raw) cred.peerCertificateDer = new Uint8Array(peer.raw);
  return cred;
}

function error(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
}

/** The handler of CreateCertificate. */
export function createCertificateHandler(
  deps: CaServiceDeps,
): grpc.handleUnaryCall<CertificateRequest, { certChain: string[] }> {
  const hooks = deps.hooks ?? {};
  const refuse = (reason: string, idExtraction = false): grpc.ServiceError => {
    if (idExtraction) hooks.onIdExtractionError?.(reason);
    hooks.onAuthFailure?.(reason);
    return error(grpc.status.UNAUTHENTICATED, "request authenticate failure");
  };
  const handle = async (
    call: grpc.ServerUnaryCall<CertificateRequest, unknown>,
  ): Promise<{ certChain: string[] }> => {
    hooks.onCsr?.();
    const req = call.request;
    const auth = await deps.authenticate(credentialsOf(call));
    if (!auth.ok) throw refuse(auth.reason, auth.idExtraction);
    if (req.metadata?.[IMPERSONATED_IDENTITY_KEY]) {
      throw refuse(`impersonation is not supported: ${NODE_AUTHENTICATION_ABSENT}`);
    }
    const id: CallerIdentity = auth.identity;
    const spiffeId = formatSpiffeId(id);
    const ttlSeconds = effectiveTtlSeconds(Number(req.validityDuration), deps.defaultTtlMs, deps.maxTtlMs);
    let chain: string[];
    try {
      chain = await deps.sign({ csrPem: req.csr, spiffeId, ttlSeconds });
    } catch (e) {
      if (e instanceof SignError) {
        if (e.kind === "identity_mismatch") {
          hooks.onAuthFailure?.(e.message);
          throw error(
            grpc.status.PERMISSION_DENIED,
            `${spiffeId} may not obtain a certificate for another identity`,
          );
        }
        if (e.kind === "parse") {
          hooks.onParseError?.(e.message);
          throw error(grpc.status.INVALID_ARGUMENT, `CSR parsing error (${e.message})`);
        }
        hooks.onSignError?.(e.message);
        throw error(grpc.status.INTERNAL, `CSR signing error (${e.message})`);
      }
      hooks.onSignError?.((e as Error).message);
      throw error(grpc.status.UNAVAILABLE, "the CA signer is unavailable");
    }
    hooks.onSuccess?.({
      spiffeId,
      method: auth.method,
      notAfter: new Date(new X509Certificate(chain[0]).validTo),
    });
    return { certChain: chain };
  };
  return (call, callback) => {
    handle(call).then(
      (res) => callback(null, res),
      (e: grpc.ServiceError) => callback(e.code !== undefined ? e : error(grpc.status.INTERNAL, e.message)),
    );
  };
}

/** Adds mesh.v1.CertificateService to a gRPC server. */
export function registerCertificateService(
  server: Pick<grpc.Server, "addService">,
  deps: CaServiceDeps,
): void {
  server.addService(certificateProtocol().service, { createCertificate: createCertificateHandler(deps) });
}
