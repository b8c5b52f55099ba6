/**
 * Inbound listeners: one per container port, applying the port's mutual TLS mode and forwarding
 * HTTP/1.1 to the application with X-Forwarded-Client-Cert.
 *
 * @module
 */
export { InboundListener, type InboundListenerOptions } from "./listener.ts";
export {
  INBOUND_COUNTERS,
  type InboundCounter,
  type InboundObserver,
  InboundStats,
  type RefusalReason,
} from "./observer.ts";
export { checkPeer, InboundTls, type PeerCheck, type ServingContext } from "./tls_context.ts";
export { UpstreamPool, type UpstreamPoolOptions } from "./upstream_pool.ts";
export { certificateFields, certificateHash, formatXfccElement, type XfccElement } from "./xfcc.ts";
