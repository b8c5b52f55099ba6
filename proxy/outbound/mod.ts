/**
 * The outbound data path: the application's requests to services, with host resolution, round-robin
 * endpoint choice, pooled upstream connections and automatic mutual TLS.
 *
 * @module
 */
export { type EndpointChoice, RoundRobin } from "./balancer.ts";
export { DialError, type DialFailure, EndpointPool, mtlsDialer, plainDialer } from "./endpoint_pool.ts";
export { OutboundListener, type OutboundListenerOptions } from "./listener.ts";
export {
  type LocalReplyKind,
  OUTBOUND_COUNTERS,
  type OutboundObserver,
  OutboundStats,
} from "./outbound_stats.ts";
export { parseAuthority, type Resolution, resolveHost, resolveService, type ServicePort } from "./resolve.ts";
