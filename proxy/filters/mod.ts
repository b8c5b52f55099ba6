/**
 * The inbound request filters: end-user JWT authentication and authorization, with the shared
 * policy logic (shared/policy), compiled once per runtime snapshot.
 *
 * @module
 */
export { type ConnectionAttributes, InboundPolicyFilter, normalizedTarget } from "./inbound_filter.ts";
export { AUTHZ_DEBUG_HEADER, type InboundPolicies, inboundPoliciesOf } from "./policies.ts";
