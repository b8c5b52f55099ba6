/**
 * The AuthorizationPolicy as the evaluator reads it: the policy, its rules, sources, operations
 * and conditions, with the value lists that may be absent. The resource's generated type and a
 * decoded mesh.v1 policy both fit.
 *
 * @module
 */

/** A list field as policies carry it: absent, null or empty all mean "not set". */
export type AuthorizationValueList = readonly string[] | null | undefined;

/** A `from[].source` (the AuthorizationPolicy's Source; decoded mesh.v1.Source fits too). */
export interface AuthorizationSourceView {
  /** Peer identities `<td>/ns/<ns>/sa/<sa>` (SPIFFE ID without `spiffe://`); `*` at either end. */
  principals?: AuthorizationValueList;
  /** Peer identities that must not match. */
  notPrincipals?: AuthorizationValueList;
  /** JWT principals `<iss>/<sub>`; `*` at either end, or for iss or sub. */
  requestPrincipals?: AuthorizationValueList;
  /** JWT principals that must not match; `["*"]` matches requests without one. */
  notRequestPrincipals?: AuthorizationValueList;
  /** Peer namespaces (from the peer identity); `*` wildcards. */
  namespaces?: AuthorizationValueList;
  /** Peer namespaces that must not match. */
  notNamespaces?: AuthorizationValueList;
  /** Peer service accounts `<ns>/<sa>`, or `<sa>` in the policy's namespace. */
  serviceAccounts?: AuthorizationValueList;
  /** Peer service accounts that must not match. */
  notServiceAccounts?: AuthorizationValueList;
  /** Peer address IPs or CIDR blocks. */
  ipBlocks?: AuthorizationValueList;
  /** Peer addresses that must not match. */
  notIpBlocks?: AuthorizationValueList;
  /** Original client IPs or CIDR blocks. */
  remoteIpBlocks?: AuthorizationValueList;
  /** Original client addresses that must not match. */
  notRemoteIpBlocks?: AuthorizationValueList;
  /** Trust domains of the peer identity; `*` wildcards. */
  trustDomains?: AuthorizationValueList;
  /** Trust domains that must not match. */
  notTrustDomains?: AuthorizationValueList;
}

/** A `to[].operation`. */
export interface AuthorizationOperationView {
  /** Host header values, case-insensitive; `*` at either end. */
  hosts?: AuthorizationValueList;
  /** Host header values that must not match. */
  notHosts?: AuthorizationValueList;
  /** Destination ports as decimal strings. */
  ports?: AuthorizationValueList;
  /** Destination ports that must not match. */
  notPorts?: AuthorizationValueList;
  /** HTTP methods; `*` at either end. */
  methods?: AuthorizationValueList;
  /** HTTP methods that must not match. */
  notMethods?: AuthorizationValueList;
  /** Normalized paths without query; `*` at either end, or `{*}`/`{**}` templates. */
  paths?: AuthorizationValueList;
  /** Paths that must not match. */
  notPaths?: AuthorizationValueList;
}

/** A rule of an AuthorizationPolicy. */
export interface AuthorizationRuleView {
  /** Sources, any of which must match; none: any source. */
  from?: readonly { source?: AuthorizationSourceView | null }[] | null;
  /** Operations, any of which must match; none: any operation. */
  to?: readonly { operation?: AuthorizationOperationView | null }[] | null;
  /** Conditions (Istio's documented keys), all of which must match. */
  when?:
    | readonly { key: string; values?: AuthorizationValueList; notValues?: AuthorizationValueList }[]
    | null;
}

/**
 * An AuthorizationPolicy as the evaluator reads it: its namespace and name, and its spec's action
 * and rules. A decoded `mesh.v1.Authorization` is one; for a YAML resource use
 * {@link authorizationPolicyView}.
 */
export interface AuthorizationPolicyView {
  /** The policy's namespace. */
  namespace: string;
  /** The policy's name. */
  name: string;
  /** ALLOW (default), DENY or AUDIT; CUSTOM is not supported yet. */
  action?: string;
  /** Absent, null or empty: the policy matches nothing. */
  rules?: readonly AuthorizationRuleView[] | null;
}
