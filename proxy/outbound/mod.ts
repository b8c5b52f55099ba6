/**
 * The outbound data path: the application's requests to services, with host resolution, round-robin
 * endpoint choice, pooled upstream connections and automatic mutual TLS.
 *
 * @module
 */
export { type EndpointChoice, RoundRobin } from "./balancer.ts";
export { DialError, type DialFailure, EndpointPool, mtlsDialer, plainDialer } from "./endpoint_pool.ts";
export {
  type LocalReplyKind,
  OUTBOUND_COUNTERS,
  OutboundListener,
  type OutboundListenerOptions,
  type OutboundObserver,
  OutboundStats,
} from "./listener.ts";
export { parseAuthority, type Resolution, resolveHost, resolveService, type ServicePort } from "./resolve.ts";
