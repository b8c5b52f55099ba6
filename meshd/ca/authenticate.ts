/**
 * Who is asking for a certificate. Two credentials are accepted (seed "Authentication" 3):
 *
 * - a client certificate of this mesh, for renewal: issued by this CA's signing certificate (or an
 *   intermediate of its chain), valid now, not a CA, allowed for clientAuth, with exactly one URI
 *   SAN that is a workload SPIFFE ID of this trust domain;
 * - a bearer JWT minted by {@link ./bootstrap_tokens.ts}: ES256 signed by meshd's token key, `typ`
 *   `mesh-bootstrap+jwt`, `iss` as configured, `aud` one of TOKEN_AUDIENCES, not expired, `sub`
 *   `system:serviceaccount:<ns>:<sa>`.
 *
 * - when the Kubernetes API is the config source, any other bearer token: a Kubernetes
 *   service-account token, checked with the TokenReview API ({@link ./token_review.ts}). A token
 *   whose JOSE header says `typ: mesh-bootstrap+jwt` is only ever checked as a bootstrap token.
 *
 * The client certificate is tried first (Istio's order); the first credential that verifies wins.
 * The result is the identity that will be certified; nothing in the CSR can change it.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";
import * as jose from "jose";
import { parseSpiffeId } from "../../shared/identity/mod.ts";
import {
  BOOTSTRAP_TOKEN_TYPE,
  DEFAULT_TOKEN_ISSUER,
  parseServiceAccountSubject,
} from "../../shared/internal/ca/bootstrap_tokens.ts";
import { issuedBy, parseCertificate, uriSans, validityProblem } from "./certs.ts";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";

/** An authenticated workload. */
export interface CallerIdentity {
  /** The mesh's trust domain (tokens) or the certificate's (which must be the mesh's). */
  trustDomain: string;
  /** The workload's namespace. */
  namespace: string;
  /** The workload's service account. */
  serviceAccount: string;
}

/** Which credential authenticated: a bootstrap token, a client certificate, a Kubernetes token. */
export type AuthMethod = "jwt" | "mtls" | "k8s-jwt";

/** The credentials a request carried. */
export interface Credentials {
  /** The `authorization` header or metadata value, e.g. `Bearer eyJ...`. */
  authorization?: string;
  /** The DER of the peer's TLS client certificate, when the connection was mutual TLS. */
  peerCertificateDer?: Uint8Array;
}

/**
 * The outcome: an identity, or a reason. `idExtraction` is set when a credential verified but no
 * identity could be taken from it (ca_server_id_extraction_err_count).
 */
export type AuthResult =
  | { ok: true; identity: CallerIdentity; method: AuthMethod }
  | { ok: false; reason: string; idExtraction: boolean };

/** Options of {@link Authenticator}. */
export interface AuthenticatorOptions {
  /** This mesh's trust domain. */
  trustDomain: string;
  /** TOKEN_AUDIENCES: a token whose `aud` holds any of them is accepted. */
  tokenAudiences: string[];
  /** Expected `iss`; default `meshd`. */
  tokenIssuer?: string;
  /** The key that verifies bootstrap tokens. */
  tokenVerificationKey: CryptoKey;
  /** PEM certificates that issue workload certificates: the signing certificate and its intermediates. */
  issuerCertificatesPem: string[];
  /** Allowed clock skew for `exp`/`nbf`, seconds; default 5. */
  clockToleranceSeconds?: number;
  /** The current time; for tests. */
  now?: () => Date;
  /**
   * Checks a bearer token that is not a bootstrap token (a Kubernetes service-account token, with
   * the TokenReview API); absent without the Kubernetes API, and then such tokens are refused.
   */
  reviewToken?: (token: string) => Promise<AuthResult>;
}

/** Longest `authorization` value looked at. */
const MAX_TOKEN_CHARS = 8192;

/** Verifies credentials of CSR requests. */
export class Authenticator {
  readonly #opts: AuthenticatorOptions;
  readonly #issuers: x509.X509Certificate[];

  /** @param options trust domain, token settings and the certificates that issue mesh certificates */
  constructor(options: AuthenticatorOptions) {
    if (options.tokenAudiences.length === 0) throw new Error("at least one token audience is needed");
    this.#opts = options;
    this.#issuers = options.issuerCertificatesPem.flatMap((p) =>
      pemCertificates(p).map((b) => parseCertificate(b.der, "an issuer certificate"))
    );
  }

  /** Tries the client certificate, then the bearer token. */
  async authenticate(cred: Credentials): Promise<AuthResult> {
    const failures: AuthResult[] = [];
    if (cred.peerCertificateDer !== undefined) {
      const r = await this.verifyPeerCertificate(cred.peerCertificateDer);
      if (r.ok) return r;
      failures.push(r);
    }
    if (cred.authorization !== undefined) {
      const r = await this.verifyAuthorization(cred.authorization);
      if (r.ok) return r;
      failures.push(r);
    }
    if (failures.length === 0) {
      return {
        ok: false,
        reason: "no credential: neither a bearer token nor a client certificate",
        idExtraction: false,
      };
    }
    return {
      ok: false,
      reason: failures.map((f) => (f as { reason: string }).reason).join("; "),
      idExtraction: failures.some((f) => !f.ok && f.idExtraction),
    };
  }

  /** Verifies an `authorization: Bearer <jwt>` value. */
  async verifyAuthorization(header: string): Promise<AuthResult> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) return fail('token: the authorization value is not "Bearer <token>"');
    if (m[1].length > MAX_TOKEN_CHARS) return fail(`token: longer than ${MAX_TOKEN_CHARS} characters`);
    const review = this.#opts.reviewToken;
    if (review !== undefined && !isBootstrapToken(m[1])) return await review(m[1]);
    return await this.verifyToken(m[1]);
  }

  /** Verifies a bootstrap token. */
  async verifyToken(token: string): Promise<AuthResult> {
    let payload: jose.JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, this.#opts.tokenVerificationKey, {
        algorithms: ["ES256"],
        typ: BOOTSTRAP_TOKEN_TYPE,
        issuer: this.#opts.tokenIssuer ?? DEFAULT_TOKEN_ISSUER,
        audience: this.#opts.tokenAudiences,
        requiredClaims: ["exp", "iat", "sub"],
        clockTolerance: this.#opts.clockToleranceSeconds ?? 5,
        currentDate: this.#opts.now?.(),
      }));
    } catch (e) {
      return fail(`token: ${tokenReason(e)}`);
    }
    const sa = parseServiceAccountSubject(payload.sub);
    if (!sa) {
      return fail(
        `token: subject ${JSON.stringify(payload.sub)} is not system:serviceaccount:<ns>:<sa>`,
        true,
      );
    }
    return { ok: true, method: "jwt", identity: { trustDomain: this.#opts.trustDomain, ...sa } };
  }

  /** Verifies a peer certificate (DER) as a workload certificate of this mesh. */
  async verifyPeerCertificate(der: Uint8Array): Promise<AuthResult> {
    let cert: x509.X509Certificate;
    try {
      cert = parseCertificate(der, "the client certificate");
    } catch (e) {
      return fail(`certificate: ${(e as Error).message}`);
    }
    const invalid = validityProblem(cert, this.#opts.now?.() ?? new Date());
    if (invalid) return fail(`certificate: ${invalid}`);
    if (cert.getExtension(x509.BasicConstraintsExtension)?.ca) {
      return fail("certificate: is a CA certificate");
    }
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
    if (eku && !eku.usages.includes(x509.ExtendedKeyUsage.clientAuth)) {
      return fail("certificate: not allowed for client authentication (extended key usage)");
    }
    let trusted = false;
    for (const issuer of this.#issuers) if (await issuedBy(cert, issuer)) trusted = true;
    if (!trusted) return fail("certificate: not issued by this mesh's CA");
    const uris = uriSans(cert);
    if (uris.length !== 1) {
      return fail(`certificate: has ${uris.length} URI SANs; exactly one SPIFFE ID is needed`, true);
    }
    let id;
    try {
      id = parseSpiffeId(uris[0]);
    } catch (e) {
      return fail(`certificate: ${(e as Error).message}`, true);
    }
    if (id.trustDomain !== this.#opts.trustDomain) {
      return fail(`certificate: trust domain ${id.trustDomain} is not ${this.#opts.trustDomain}`, true);
    }
    return { ok: true, method: "mtls", identity: id };
  }
}

/** Whether the token's JOSE header claims to be a bootstrap token; unparsable headers do not. */
function isBootstrapToken(token: string): boolean {
  try {
    return jose.decodeProtectedHeader(token).typ === BOOTSTRAP_TOKEN_TYPE;
  } catch {
    return false;
  }
}

function fail(reason: string, idExtraction = false): AuthResult {
  return { ok: false, reason, idExtraction };
}

function tokenReason(e: unknown): string {
  if (e instanceof jose.errors.JWTExpired) return "expired";
  if (e instanceof jose.errors.JWTClaimValidationFailed) {
    return `claim ${e.claim} rejected (${e.reason}: ${e.message})`;
  }
  if (e instanceof jose.errors.JWSSignatureVerificationFailed) {
    return "signature does not verify with meshd's token key";
  }
  if (e instanceof jose.errors.JOSEAlgNotAllowed) return `algorithm not allowed (${e.message})`;
  if (e instanceof jose.errors.JWTInvalid || e instanceof jose.errors.JWSInvalid) {
    return `malformed (${e.message})`;
  }
  return (e as Error).message ?? String(e);
}
