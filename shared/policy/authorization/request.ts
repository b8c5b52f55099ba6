/**
 * What the authorization evaluator is asked about: one HTTP request and its connection, and what
 * it answers. The proxy fills a request from the wire; meshctl from its command line.
 *
 * @module
 */

/** One request, as the attributes AuthorizationPolicy fields and conditions read. */
export interface AuthorizationRequest {
  /** HTTP method as received, e.g. `GET` (`methods`). */
  method: string;
  /**
   * The request target as received (path and optional query). It is normalized (DEFAULT_PROXY_SETTINGS'
   * option) and the query dropped before `paths` match, unless `pathNormalized` says that was done
   * already (the proxy normalizes with the mesh's option).
   */
  path: string;
  /** The target is already a normalized path without query (the proxy normalizes once). */
  pathNormalized?: boolean;
  /** The Host header (`hosts`), as received, port included when the client sent one. */
  host?: string;
  /** Destination (container) port (`ports`, `destination.port`). */
  port: number;
  /**
   * Request headers for `request.headers[...]` conditions: lower-case names, repeated headers
   * joined with `,` (as Envoy does). Only the names of {@link CompiledAuthorization.headerNames}
   * are read.
   */
  headers?: Readonly<Record<string, string>>;
  /**
   * The peer's SPIFFE ID from its mutual TLS certificate (`spiffe://<td>/ns/<ns>/sa/<sa>`); absent
   * for plain text. Source of `principals`, `namespaces`, `serviceAccounts`, `trustDomains`.
   */
  sourcePrincipal?: string;
  /** The peer address of the connection (`ipBlocks`, `source.ip`). */
  sourceIp?: string;
  /**
   * The original client address (`remoteIpBlocks`, `remote.ip`); default `sourceIp` (no trusted
   * proxy hops, Istio's default numTrustedProxies 0).
   */
  remoteIp?: string;
  /** The address the connection was accepted on (`destination.ip`). */
  destinationIp?: string;
  /** TLS server name the client sent (`connection.sni`). */
  sni?: string;
  /**
   * The request principal `<iss>/<sub>` of a verified JWT (`requestPrincipals`,
   * `request.auth.principal`); absent when the request had no valid token.
   */
  requestPrincipal?: string;
  /**
   * The verified JWT's payload (`request.auth.claims[...]`, `audiences`, `presenter`; `iss` and
   * `sub` for `requestPrincipals`). Space-delimited claims should already be split into lists.
   */
  claims?: Readonly<Record<string, unknown>>;
}

/**
 * One TCP connection, as the L4 fields read it (no HTTP request: see tcp_rules.ts for what becomes
 * of HTTP-only fields). Same meanings as in {@link AuthorizationRequest}.
 */
export interface AuthorizationConnection {
  /** Destination (container) port (`ports`, `destination.port`). */
  port: number;
  /** The peer's SPIFFE ID from mutual TLS; absent for plain text. */
  sourcePrincipal?: string;
  /** The peer address (`ipBlocks`, `source.ip`). */
  sourceIp?: string;
  /** The original client address (`remoteIpBlocks`, `remote.ip`); default `sourceIp`. */
  remoteIp?: string;
  /** The address the connection was accepted on (`destination.ip`). */
  destinationIp?: string;
  /** TLS server name the client sent (`connection.sni`). */
  sni?: string;
}

/** A policy named by namespace and name. */
export interface AuthorizationPolicyRef {
  /** The policy's namespace. */
  namespace: string;
  /** The policy's name. */
  name: string;
}

/** The evaluator's answer. */
export interface AuthorizationDecision {
  /** Whether the request may proceed. */
  allowed: boolean;
  /**
   * The policy whose rule decided: the matching DENY policy, or the matching ALLOW policy. Absent
   * when no policy decided: no ALLOW policy applies (allowed), or none of them matched (denied).
   */
  policy?: AuthorizationPolicyRef;
  /** That policy's action. */
  action?: "ALLOW" | "DENY";
  /** Index (from 0) of the deciding rule in that policy's `rules`. */
  ruleIndex?: number;
  /**
   * One line for logs and the debug header, e.g. `denied by DENY policy foo/deny-admin rule 0`,
   * `denied: no rule of ALLOW policies foo/a, foo/b matched`, `allowed: no ALLOW policy applies`.
   */
  reason: string;
  /** The first AUDIT policy rule that matched (Istio logs it; the decision is unchanged). */
  audit?: { policy: AuthorizationPolicyRef; ruleIndex: number };
}
