/**
 * The ADS server's vocabulary: the proxy at the other end of a stream, what a generator produces, the
 * observers and options of the server, debug requests, and what /debug/syncz shows. Kept apart from
 * the server so that the generators, the wire encoder and the debug pages depend on these shapes, not
 * on the server.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import type { TypeSyncStatus } from "../../shared/internal/xds/sync_status.ts";

/** A protobuf message as @grpc/proto-loader decodes it (camelCase fields). */
// deno-lint-ignore no-explicit-any
export type Message = Record<string, any>;

/** The proxy at the other end of a stream, from the request's `node`. */
export interface ProxyNode {
  /** Node id, e.g. `sidecar~10.0.0.5~httpbin-1.foo~foo.svc.cluster.local`. */
  id: string;
  /** Node cluster. */
  cluster: string;
  /** Node metadata (google.protobuf.Struct as plain JSON). */
  metadata: Record<string, unknown>;
  /**
   * The SPIFFE ID of the client certificate the stream's TLS verified (Istio's VerifiedIdentity); unset
   * on the plain-text port and for a client without a certificate. What the node claims is not proof;
   * this is.
   */
  verifiedIdentity?: string;
}

/** The listener a stream came in on: meshd's plain-text `--grpcAddr` or its TLS `--secureGRPCAddr`. */
export type XdsTransport = "plaintext" | "tls";

/** What {@link AdsServerOptions.authorize} decides about a new stream. */
export type XdsAuthorization =
  | { ok: true; verifiedIdentity: string | undefined }
  | { ok: false; reason: string };

/** One resource as a generator produces it. */
export interface GeneratedResource {
  /** Resource name, unique within its type. */
  name: string;
  /** Version of this resource's content (a hash): unchanged version, nothing sent in delta. */
  version: string;
  /** The encoded message, the `value` of its google.protobuf.Any. */
  body: Uint8Array;
}

/** The resources of one type for one proxy. */
export interface GeneratedList {
  resources: GeneratedResource[];
  /**
   * A version of the whole list (for example a hash of the resource versions): when it equals the
   * one last sent on a stream, the stream skips the per-resource diff.
   */
  version: string;
}

/** Produces each proxy's resources from the current push context. */
export interface ResourceGenerator {
  /** Version label of the current push context; changes on every push. */
  version(): string;
  /** The resources of `typeUrl` that apply to the proxy, or undefined for a type not served. */
  generate(node: ProxyNode, typeUrl: string): GeneratedList | undefined;
}

/** Observers for metrics and logs; all optional. */
export interface AdsHooks {
  /** A stream was opened (the first request named the node). */
  onConnect?(stream: AdsStreamStatus): void;
  /** A stream ended. */
  onDisconnect?(stream: AdsStreamStatus): void;
  /** A proxy rejected a response; its last good config stays in force on its side. */
  onNack?(stream: AdsStreamStatus, typeUrl: string, message: string): void;
  /**
   * A proxy acknowledged a response; `pushedAt` is when the push that produced it began (ms). The
   * stream's status is built only when asked for: this runs for every stream of every push.
   */
  onAck?(stream: AdsStreamRef, typeUrl: string, pushedAt: number): void;
  /**
   * A response was written; `ms` is how long generating and writing it took (disco_xds_push_time).
   * The stream's status is built only when asked for, as for onAck.
   */
  onSend?(stream: AdsStreamRef, typeUrl: string, resources: number, bytes: number, ms: number): void;
  /** A request carried a nonce that is not the latest sent (disco_xds_expired_nonce). */
  onExpiredNonce?(stream: AdsStreamStatus, typeUrl: string): void;
  /**
   * A stream was served after a push: `ms` from the push's start until its turn came (its responses
   * written, or nothing to send); Istio's pilot_proxy_queue_time (disco_proxy_queue_time).
   */
  onProxyQueued?(ms: number): void;
  /**
   * A push reached every stream it was for: `ms` from its start (the push context built) until the
   * last of its `streams` was served or gone; meshd's own fan-out time (disco_push_fanout_time),
   * which does not depend on how fast proxies read.
   */
  onPushFanout?(ms: number, streams: number): void;
}

/** Observers, plus flow control. */
export interface AdsServerOptions extends AdsHooks {
  /**
   * DISCO_PUSH_THROTTLE: how many streams may be sending at once (a response written and not yet
   * handed to the connection, which HTTP/2 flow control paces by how fast the proxy reads). Bounds
   * what meshd buffers when thousands of proxies connect or a push reaches them all: without it
   * every response would queue in memory at once. 0 or unset: 1000 (the byte budget below bounds the
   * memory; measured on 2 cores, 1000 converged faster than Istio's 100 at 10,000 proxies). Istio
   * sizes the default from the machine (min(15 + 5 x cores, 100), pilot/pkg/features/tuning.go)
   * because its pushes run on every core; meshd's run on one JavaScript thread, so it does not.
   */
  pushThrottle?: number;
  /** How long a stream may hold a slot while its writes do not complete, ms; default 5000. */
  sendTimeoutMs?: number;
  /**
   * Bytes that may be in flight at once across all streams; default 32 MiB. Large responses (a
   * proxy's first full sync) are paced by it; small pushes (one policy changed) fan out up to
   * `pushThrottle` streams at a time.
   */
  maxInFlightBytes?: number;
  /**
   * Target size of one delta response (what a first sync is cut into), octets; default 8 KiB
   * (`CHUNK_BYTES` in delta_diff.ts, for Deno's `node:http2`, which keeps each stream's buffer at its
   * largest write). meshd's codec transport takes 128 KiB (`CODEC_CHUNK_BYTES`).
   */
  responseBytes?: number;
  /**
   * Decides whether the peer of a new stream may act as the node it names (XDS_AUTH), and which
   * identity its certificate proves; a refusal's reason reaches the proxy as PERMISSION_DENIED. Absent:
   * every stream is accepted with no verified identity.
   */
  authorize?(
    call: grpc.ServerDuplexStream<Message, Message>,
    node: ProxyNode,
    transport: XdsTransport,
  ): XdsAuthorization;
  /**
   * Answers debug requests (type URLs under {@link DEBUG_TYPE_URL}). Absent: they are refused as an
   * unserved type. A stream that only sends debug requests is not a proxy: it is not authorized by
   * `authorize`, not registered, not counted by the hooks and never pushed to.
   */
  debug?: DebugResponder;
}

/** Istio's debug type URL (pilot/pkg/model DebugType); `istio.io/debug/<page>` asks for one page. */
export const DEBUG_TYPE_URL = "istio.io/debug";

/** Whether a type URL is a debug request rather than a resource type. */
export function isDebugTypeUrl(typeUrl: string): boolean {
  return typeUrl === DEBUG_TYPE_URL || typeUrl.startsWith(`${DEBUG_TYPE_URL}/`);
}

/** One debug request as the ADS server received it. */
export interface DebugRequest {
  /** The request's type URL, e.g. `istio.io/debug/syncz` or `istio.io/debug/config_dump?proxyID=foo/a`. */
  typeUrl: string;
  /** The request's resource names (Istio's form: type URL `istio.io/debug`, one name `syncz`). */
  resourceNames: string[];
  /** The node the stream named. */
  node: ProxyNode;
  /** The listener the request came in on. */
  transport: XdsTransport;
}

/** A debug answer: resources (each becomes an Any of `typeUrl`), or a gRPC status to end the stream with. */
export type DebugAnswer =
  | { ok: true; resources: { name: string; typeUrl: string; body: Uint8Array }[] }
  | { ok: false; code: grpc.status; details: string };

/** Answers debug requests; may be asynchronous (authentication). */
export type DebugResponder = (
  call: grpc.ServerDuplexStream<Message, Message>,
  request: DebugRequest,
) => Promise<DebugAnswer>;

/** A stream whose status an observer may ask for (building it allocates: hot hooks get this). */
export interface AdsStreamRef {
  /** Connection id, as {@link AdsStreamStatus.id}. */
  readonly id: string;
  /** The stream as /debug/syncz shows it, built now. */
  status(): AdsStreamStatus;
}

/** A stream as /debug/syncz and /debug/connections show it. */
export interface AdsStreamStatus {
  /** Connection id, unique in this meshd: `<node id>-<n>`. */
  id: string;
  node: ProxyNode;
  /** Delta or state of the world. */
  protocol: "delta" | "sotw";
  /** Peer address as gRPC reports it. */
  peer: string;
  /** Connection time, ms since the epoch. */
  connectedAt: number;
  types: TypeSyncStatus[];
}
