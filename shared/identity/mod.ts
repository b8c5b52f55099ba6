/**
 * Workload identities of the mesh: SPIFFE IDs `spiffe://<trust-domain>/ns/<namespace>/sa/<account>`
 * and Istio's principal form of them.
 *
 * @module
 */
export {
  DEFAULT_TRUST_DOMAIN,
  formatSpiffeId,
  MAX_SPIFFE_ID_BYTES,
  MAX_TRUST_DOMAIN_BYTES,
  parseSpiffeId,
  principalOf,
  type SpiffeId,
  SpiffeIdError,
  type SpiffeIdErrorReason,
  type SpiffeIdInput,
  tryParseSpiffeId,
} from "./spiffe.ts";
