/**
 * Pure policy logic shared by meshd, the proxy and meshctl: which policy is in effect for a workload.
 *
 * @module
 */
export {
  DEFAULT_POLICY_NAMESPACE,
  type EffectiveMtlsMode,
  type EffectivePeerAuthentication,
  effectivePeerAuthentication,
  type EffectivePeerAuthenticationOptions,
  type MtlsMode,
  type PeerAuthenticationDecision,
  type PeerAuthenticationPolicy,
  type PeerAuthenticationScope,
  type PolicyRef,
} from "./peer_authentication.ts";
export {
  labelsMatch,
  policyAppliesTo,
  type PolicyAppliesToOptions,
  type SelectableWorkload,
  type SelectingPolicy,
} from "./workload_selection.ts";
export { type AutoMtlsEndpoint, dialsMtls, mtlsDisabledPorts } from "./auto_mtls.ts";
export * from "./authorization/mod.ts";
export * from "./jwt/mod.ts";
export {
  type BoundPort,
  boundPorts,
  endpointPort,
  type PortedWorkload,
  type SelectingService,
  type ServicePortSpec,
  serviceSelectsWorkload,
} from "./service_ports.ts";
