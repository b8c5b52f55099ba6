/**
 * JWT providers: one per `jwtRules` entry of the RequestAuthentications that apply to a workload, as
 * the proxy verifies them. The shape is `mesh.v1.JwtProvider` (shared/proto/mesh/v1/jwt.proto), with
 * the key set resolved (inline `jwks`, or what meshd fetched from `jwksUri` or OIDC discovery).
 * Source: Istio's JWTRule reference and convertToEnvoyJwtConfig (pilot/pkg/security/authn).
 *
 * @module
 */
import type { RequestAuthentication } from "../../api/types.gen.ts";
import { DEFAULT_POLICY_NAMESPACE } from "../peer_authentication.ts";
import { policyAppliesTo, type SelectableWorkload } from "../workload_selection.ts";

/** A header that carries the token: its name and the prefix before the token. */
export interface JwtHeaderLocation {
  /** Header name, any case. */
  name: string;
  /** Text before the token, e.g. `Bearer `; empty or absent: the whole value. */
  prefix?: string;
}

/** A claim copied to a request header after verification. */
export interface JwtClaimToHeader {
  /** Request header to set (an existing one is replaced). */
  header: string;
  /** Claim name; `.` reaches into nested objects (`a.b`). */
  claim: string;
}

/** One accepted issuer and how to find and verify its tokens (a decoded mesh.v1.JwtProvider fits). */
export interface JwtProvider {
  /** Expected `iss`. */
  issuer: string;
  /** Accepted `aud` values; empty or absent: `aud` is not checked. */
  audiences?: readonly string[];
  /**
   * The JSON Web Key Set as JSON text. Empty while there is no good fetch yet (meshd's, or the
   * proxy's own for `jwksFetcher: PROXY`): tokens of this issuer are then refused (401), never
   * accepted.
   */
  jwks: string;
  /** Where the key set comes from; empty for inline keys. */
  jwksUri?: string;
  /**
   * Who fetches `jwksUri` (DISCO_JWT_ENABLE_REMOTE_JWKS, decided by `jwksFetcherOf`): `MESHD` (the
   * default; `jwks` carries meshd's fetch) or `PROXY` (the proxy fetches and fills `jwks` itself).
   */
  jwksFetcher?: "MESHD" | "PROXY";
  /** With `PROXY`: refresh interval (DISCO_JWT_PUB_KEY_REFRESH_INTERVAL), ms. */
  jwksRefreshIntervalMs?: number;
  /** With `PROXY`: one fetch's limit (the rule's `timeout`, default 5 s), ms. */
  jwksFetchTimeoutMs?: number;
  /** Headers to read the token from. With no location at all: `Authorization: Bearer`, then `access_token`. */
  fromHeaders?: readonly JwtHeaderLocation[];
  /** Query parameters to read the token from. */
  fromParams?: readonly string[];
  /** Cookies to read the token from. */
  fromCookies?: readonly string[];
  /** Header that receives the token's payload (base64url) after verification. */
  outputPayloadToHeader?: string;
  /** Keep the token in the forwarded request; default false: a token from a header is removed. */
  forwardOriginalToken?: boolean;
  /** Claims to copy to headers after verification. */
  outputClaimToHeaders?: readonly JwtClaimToHeader[];
  /** Claims split on spaces for authorization matching, besides `scope` and `permission`. */
  spaceDelimitedClaims?: readonly string[];
}

/** A RequestAuthentication that applies to a workload, as its providers. */
export interface AppliedRequestAuthentication {
  /** The policy's namespace. */
  namespace: string;
  /** The policy's name. */
  name: string;
  /** Its `jwtRules`, as providers (`jwks` empty for `jwksUri` rules: resolve them before verifying). */
  providers: JwtProvider[];
}

/** Options of {@link applicableRequestAuthentications}. */
export interface ApplicableRequestAuthenticationOptions {
  /** The mesh root namespace; default `mesh-system`. */
  rootNamespace?: string;
}

/**
 * The RequestAuthentications that apply to a workload (its namespace's and the root namespace's,
 * selector matching its labels), in namespace/name order. Several merge: their providers are all
 * accepted (Istio's "requires any").
 *
 * @param policies every RequestAuthentication known (validated resources)
 * @param workload the workload's namespace and labels
 */
export function applicableRequestAuthentications(
  policies: readonly Pick<RequestAuthentication, "metadata" | "spec">[],
  workload: SelectableWorkload,
  options: ApplicableRequestAuthenticationOptions = {},
): AppliedRequestAuthentication[] {
  const root = options.rootNamespace ?? "mesh-system";
  return policies
    .filter((p) => policyAppliesTo(p, workload, { rootNamespace: root }))
    .map((p) => ({
      namespace: p.metadata.namespace ?? DEFAULT_POLICY_NAMESPACE,
      name: p.metadata.name,
      providers: (p.spec?.jwtRules ?? []).map((r) => ({ ...r, jwks: r.jwks ?? "" })),
    }))
    .sort((a, b) => {
      const ka = `${a.namespace}/${a.name}`;
      const kb = `${b.namespace}/${b.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
}
