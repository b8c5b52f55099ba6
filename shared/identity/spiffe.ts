/**
 * SPIFFE identities of mesh workloads: `spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>`,
 * the URI carried in workload certificates and in `X-Forwarded-Client-Cert` (policies seed,
 * "Endpoints"). Parsing follows Istio's `spiffe.ParseIdentity` (pkg/spiffe/spiffe.go) for the path
 * shape and the SPIFFE ID standard (SPIFFE-ID.md, sections 2.1 to 2.3) for the character sets and
 * length limits, which Istio does not check.
 *
 * @module
 */

/** The trust domain used when none is configured, as Istio's `cluster.local`. */
export const DEFAULT_TRUST_DOMAIN: string = "cluster.local";

/** Maximum length of a whole SPIFFE ID in bytes (SPIFFE-ID.md 2.3). */
export const MAX_SPIFFE_ID_BYTES: number = 2048;

/** Maximum length of a trust domain name in bytes (SPIFFE-ID.md 2.3, the RFC 3986 host limit). */
export const MAX_TRUST_DOMAIN_BYTES: number = 255;

const SCHEME_PREFIX = "spiffe://";
const TRUST_DOMAIN_CHARS = /^[a-z0-9._-]+$/;
const PATH_SEGMENT_CHARS = /^[A-Za-z0-9._-]+$/;
const encoder = new TextEncoder();

/** A parsed workload identity: `spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>`. */
export interface SpiffeId {
  /** Trust domain, e.g. `cluster.local`: lowercase letters, digits, `.`, `-`, `_`; at most 255 bytes. */
  trustDomain: string;
  /** Kubernetes namespace of the workload. */
  namespace: string;
  /** Kubernetes service account of the workload. */
  serviceAccount: string;
}

/** The fields needed to build a {@linkcode SpiffeId}; `trustDomain` defaults to {@linkcode DEFAULT_TRUST_DOMAIN}. */
export interface SpiffeIdInput {
  /** Trust domain; default {@linkcode DEFAULT_TRUST_DOMAIN}. */
  trustDomain?: string;
  /** Kubernetes namespace of the workload. */
  namespace: string;
  /** Kubernetes service account of the workload. */
  serviceAccount: string;
}

/**
 * Why a string is not a workload SPIFFE ID:
 * - `empty`: the empty string;
 * - `too_long`: longer than {@linkcode MAX_SPIFFE_ID_BYTES};
 * - `wrong_scheme`: does not start with `spiffe://` (the scheme is case-sensitive here, as in go-spiffe);
 * - `query_or_fragment`: contains `?` or `#`, which SPIFFE IDs must not have;
 * - `missing_trust_domain`: nothing between `spiffe://` and the path;
 * - `trust_domain_too_long`: longer than {@linkcode MAX_TRUST_DOMAIN_BYTES};
 * - `invalid_trust_domain`: a character outside `[a-z0-9._-]`, including a port or userinfo;
 * - `missing_segment`: the path stops before `/ns/<namespace>/sa/<service-account>` is complete;
 * - `empty_segment`: an empty path segment (`//`, a trailing `/`, an empty namespace or account);
 * - `wrong_path_shape`: the path is not exactly `/ns/<namespace>/sa/<service-account>`;
 * - `invalid_segment`: a namespace or account outside `[A-Za-z0-9._-]`, or `.` or `..`.
 */
export type SpiffeIdErrorReason =
  | "empty"
  | "too_long"
  | "wrong_scheme"
  | "query_or_fragment"
  | "missing_trust_domain"
  | "trust_domain_too_long"
  | "invalid_trust_domain"
  | "missing_segment"
  | "empty_segment"
  | "wrong_path_shape"
  | "invalid_segment";

/**
 * Thrown by {@linkcode parseSpiffeId} and {@linkcode formatSpiffeId} for input that is not a
 * workload SPIFFE ID. `reason` is stable for programs; `message` explains it to people.
 */
export class SpiffeIdError extends Error {
  /** The machine-readable reason. */
  readonly reason: SpiffeIdErrorReason;

  /**
   * Creates the error; its `name` is `SpiffeIdError`.
   *
   * @param reason the machine-readable reason
   * @param message the explanation, naming the offending part
   */
  constructor(reason: SpiffeIdErrorReason, message: string) {
    super(message);
    this.name = "SpiffeIdError";
    this.reason = reason;
  }
}

function byteLength(s: string): number {
  return encoder.encode(s).byteLength;
}

function checkTrustDomain(td: string): void {
  if (td === "") throw new SpiffeIdError("missing_trust_domain", "trust domain is missing");
  if (byteLength(td) > MAX_TRUST_DOMAIN_BYTES) {
    throw new SpiffeIdError(
      "trust_domain_too_long",
      `trust domain is ${byteLength(td)} bytes long; at most ${MAX_TRUST_DOMAIN_BYTES} are allowed`,
    );
  }
  if (TRUST_DOMAIN_CHARS.test(td)) return;
  // Port and userinfo get their own messages because they are the likely mistakes of someone
  // writing a URL rather than an identity.
  if (td.includes("@")) {
    throw new SpiffeIdError("invalid_trust_domain", `trust domain "${td}" must not contain userinfo ("@")`);
  }
  if (td.includes(":")) {
    throw new SpiffeIdError("invalid_trust_domain", `trust domain "${td}" must not contain a port (":")`);
  }
  throw new SpiffeIdError(
    "invalid_trust_domain",
    `trust domain "${td}" may contain only lowercase letters, digits, ".", "-" and "_"`,
  );
}

function checkSegment(value: string, what: "namespace" | "service account"): void {
  if (value === "") throw new SpiffeIdError("empty_segment", `${what} is empty`);
  // "." and ".." would be normalised away by any URI library, making two IDs compare equal.
  if (value === "." || value === ".." || !PATH_SEGMENT_CHARS.test(value)) {
    throw new SpiffeIdError(
      "invalid_segment",
      `${what} "${value}" must consist of letters, digits, ".", "-" and "_", and must not be "." or ".."`,
    );
  }
}

function checkLength(uri: string): void {
  const n = byteLength(uri);
  if (n > MAX_SPIFFE_ID_BYTES) {
    throw new SpiffeIdError(
      "too_long",
      `SPIFFE ID is ${n} bytes long; at most ${MAX_SPIFFE_ID_BYTES} are allowed`,
    );
  }
}

/**
 * Builds `spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>`, Istio's `Identity.String`.
 *
 * @param id namespace, service account and optional trust domain (default {@linkcode DEFAULT_TRUST_DOMAIN})
 * @returns the URI; {@linkcode parseSpiffeId} returns the same fields from it
 * @throws {SpiffeIdError} if a part is empty or invalid, or the URI would exceed 2048 bytes, so that
 *   every formatted ID parses
 */
export function formatSpiffeId(id: SpiffeIdInput): string {
  const trustDomain = id.trustDomain ?? DEFAULT_TRUST_DOMAIN;
  checkTrustDomain(trustDomain);
  checkSegment(id.namespace, "namespace");
  checkSegment(id.serviceAccount, "service account");
  const uri = `${SCHEME_PREFIX}${trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
  checkLength(uri);
  return uri;
}

/**
 * Parses a workload SPIFFE ID. Only the Kubernetes shape `/ns/<namespace>/sa/<service-account>` is
 * accepted, as Istio's `spiffe.ParseIdentity`; other SPIFFE paths are valid SPIFFE IDs but not
 * workload identities of this mesh.
 *
 * @param uri e.g. `spiffe://cluster.local/ns/default/sa/sleep`
 * @returns its trust domain, namespace and service account
 * @throws {SpiffeIdError} with the {@linkcode SpiffeIdErrorReason} of the first problem found
 */
export function parseSpiffeId(uri: string): SpiffeId {
  if (uri === "") throw new SpiffeIdError("empty", "SPIFFE ID is empty");
  checkLength(uri);
  if (!uri.startsWith(SCHEME_PREFIX)) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1];
    throw new SpiffeIdError(
      "wrong_scheme",
      scheme === undefined
        ? `"${uri}" has no scheme; a SPIFFE ID starts with "spiffe://"`
        : `scheme "${scheme}" is not "spiffe"; a SPIFFE ID starts with "spiffe://"`,
    );
  }
  if (uri.includes("?") || uri.includes("#")) {
    throw new SpiffeIdError("query_or_fragment", "SPIFFE ID must not have a query or fragment");
  }
  const rest = uri.slice(SCHEME_PREFIX.length);
  const slash = rest.indexOf("/");
  const trustDomain = slash === -1 ? rest : rest.slice(0, slash);
  checkTrustDomain(trustDomain);

  const expected = "expected /ns/<namespace>/sa/<service-account>";
  const segments = slash === -1 ? [] : rest.slice(slash + 1).split("/");
  // A stray "/" is reported before the shape, because it shifts every later segment; an empty
  // namespace or account is reported after it, because only then is it known to be one.
  const stray = segments.findIndex((seg, i) => seg === "" && i !== 1 && i !== 3);
  if (stray !== -1) {
    const message = stray === segments.length - 1
      ? 'path must not end with "/"'
      : 'path must not contain an empty segment ("//")';
    throw new SpiffeIdError("empty_segment", `${message}; ${expected}`);
  }
  if (segments[0] !== undefined && segments[0] !== "ns") {
    throw new SpiffeIdError("wrong_path_shape", `path starts with "/${segments[0]}"; ${expected}`);
  }
  if (segments[2] !== undefined && segments[2] !== "sa") {
    throw new SpiffeIdError("wrong_path_shape", `"/${segments[2]}" follows the namespace; ${expected}`);
  }
  if (segments[1] === "") throw new SpiffeIdError("empty_segment", `namespace is empty; ${expected}`);
  if (segments[3] === "") throw new SpiffeIdError("empty_segment", `service account is empty; ${expected}`);
  if (segments.length < 4) {
    const missing = segments.length === 0 ? "path" : segments.length === 1 ? "namespace" : "service account";
    throw new SpiffeIdError("missing_segment", `${missing} is missing; ${expected}`);
  }
  if (segments.length > 4) {
    throw new SpiffeIdError(
      "wrong_path_shape",
      `path has ${segments.length} segments, extra "/${segments.slice(4).join("/")}"; ${expected}`,
    );
  }
  const [, namespace, , serviceAccount] = segments as [string, string, string, string];
  checkSegment(namespace, "namespace");
  checkSegment(serviceAccount, "service account");
  return { trustDomain, namespace, serviceAccount };
}

/**
 * {@linkcode parseSpiffeId} for callers that treat a non-SPIFFE peer identity as "no identity",
 * such as a certificate whose URI SAN is something else.
 *
 * @param uri the candidate SPIFFE ID
 * @returns the parsed ID, or `undefined` where {@linkcode parseSpiffeId} would throw
 */
export function tryParseSpiffeId(uri: string): SpiffeId | undefined {
  try {
    return parseSpiffeId(uri);
  } catch (e) {
    if (e instanceof SpiffeIdError) return undefined;
    throw e;
  }
}

/**
 * Istio's principal form, the SPIFFE ID without `spiffe://`: `<td>/ns/<ns>/sa/<sa>`, as matched by
 * AuthorizationPolicy `source.principals` (Istio's authz `principal` attribute).
 *
 * @param id namespace, service account and optional trust domain (default {@linkcode DEFAULT_TRUST_DOMAIN})
 * @returns e.g. `cluster.local/ns/default/sa/sleep`
 * @throws {SpiffeIdError} as {@linkcode formatSpiffeId}
 */
export function principalOf(id: SpiffeIdInput): string {
  return formatSpiffeId(id).slice(SCHEME_PREFIX.length);
}
