/**
 * Who fetches a RequestAuthentication rule's JSON Web Key Set, meshd or the proxy, under
 * DISCO_JWT_ENABLE_REMOTE_JWKS (meshd seed, environment variables), after Istio's
 * PILOT_JWT_ENABLE_REMOTE_JWKS (pilot/pkg/features, convertToEnvoyJwtConfig in
 * pilot/pkg/security/authn/policy_applier.go):
 *
 * | Value                       | Mode     | `jwksUri` on a mesh host | `jwksUri` elsewhere | issuer only (OIDC) |
 * | --------------------------- | -------- | ------------------------ | ------------------- | ------------------ |
 * | `false`, `meshd`, `istiod`  | `meshd`  | meshd                    | meshd               | meshd              |
 * | `true`, `hybrid`            | `hybrid` | proxy                    | meshd               | meshd              |
 * | `proxy`, `envoy`            | `proxy`  | proxy                    | proxy               | meshd              |
 *
 * A mesh host is a `jwksUri` host name that is a host of exactly one namespace's services in the
 * registry (Istio's LookupCluster; a name in several namespaces is ambiguous, so external). OIDC
 * discovery stays with meshd in every mode, as in Istio, whose Envoy remote JWKS needs a URI. Inline
 * `jwks` is fetched by nobody.
 *
 * @module
 */

/** The three ways DISCO_JWT_ENABLE_REMOTE_JWKS can be set. */
export type JwksFetchMode = "meshd" | "hybrid" | "proxy";

/** Who fetches one rule's keys. */
export type JwksFetcher = "meshd" | "proxy";

const MODES: Record<string, JwksFetchMode> = {
  false: "meshd",
  meshd: "meshd",
  istiod: "meshd",
  true: "hybrid",
  hybrid: "hybrid",
  proxy: "proxy",
  envoy: "proxy",
};

/**
 * The mode a DISCO_JWT_ENABLE_REMOTE_JWKS value names (case-sensitive, as Istio's).
 *
 * @throws Error listing the accepted values, for any other text (Istio silently falls back to
 *   istiod, which would hide a typo)
 */
export function parseJwksFetchMode(value: string): JwksFetchMode {
  const mode = Object.hasOwn(MODES, value) ? MODES[value] : undefined;
  if (mode === undefined) {
    throw new Error(`${JSON.stringify(value)} is not one of ${Object.keys(MODES).join(", ")}`);
  }
  return mode;
}

/** The parts of a jwtRules entry that decide where its keys come from. */
export interface JwksRule {
  /** The expected `iss`; alone, the OIDC discovery base. */
  issuer?: string;
  /** http(s) URL of the key set. */
  jwksUri?: string;
  /** An inline key set (JSON text). */
  jwks?: string;
}

/**
 * The key under which a rule's fetched key set is kept: its `jwksUri`, or `oidc:<issuer>` for OIDC
 * discovery; undefined for inline `jwks` (nothing to fetch).
 */
export function jwksSourceKey(rule: JwksRule): string | undefined {
  if (rule.jwks) return undefined;
  if (rule.jwksUri) return rule.jwksUri;
  return rule.issuer ? `oidc:${rule.issuer}` : undefined;
}

/** A service of the registry, as far as the mesh-host check reads it. */
export interface JwksRegistryService {
  /** The service's namespace. */
  namespace: string;
  /** Its host names (FQDNs). */
  hosts: readonly string[];
}

/** Options of {@link jwksFetcherOf}. */
export interface JwksFetcherOptions {
  /** DISCO_JWT_ENABLE_REMOTE_JWKS, parsed. */
  mode: JwksFetchMode;
  /** The registry's services (ServiceEntries); only read in `hybrid` mode. */
  services: readonly JwksRegistryService[];
}

/**
 * Whether `host` names a service of the registry: a host (case-insensitive, no trailing dot) of
 * services in exactly one namespace, as Istio's LookupCluster.
 */
export function isMeshHost(host: string, services: readonly JwksRegistryService[]): boolean {
  const wanted = host.toLowerCase().replace(/\.$/, "");
  const namespaces = new Set<string>();
  for (const s of services) {
    if (s.hosts.some((h) => h.toLowerCase().replace(/\.$/, "") === wanted)) namespaces.add(s.namespace);
  }
  return namespaces.size === 1;
}

/**
 * Who fetches a rule's keys (table in the module doc); undefined for inline `jwks` or a rule with
 * no key source. A `jwksUri` that is not a URL counts as external (validation refuses it anyway).
 */
export function jwksFetcherOf(rule: JwksRule, options: JwksFetcherOptions): JwksFetcher | undefined {
  if (jwksSourceKey(rule) === undefined) return undefined;
  if (!rule.jwksUri || options.mode === "meshd") return "meshd";
  if (options.mode === "proxy") return "proxy";
  let host: string;
  try {
    host = new URL(rule.jwksUri).hostname;
  } catch {
    return "meshd";
  }
  return isMeshHost(host, options.services) ? "proxy" : "meshd";
}
