/**
 * The ADS server: Envoy's AggregatedDiscoveryService, both StreamAggregatedResources (state of the
 * world) and DeltaAggregatedResources (incremental), over one gRPC server. It knows nothing of
 * policies: a {@link ResourceGenerator} turns the current push context into each proxy's resources,
 * and this module tracks, per stream and type, what was sent, what was acknowledged, and nonces.
 *
 * Protocol: envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol (ACK/NACK, nonces, wildcard
 * subscriptions, delta subscribe/unsubscribe and initial_resource_versions).
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { adsProtocol } from "./envoy_protos.ts";
import { structToJson } from "./struct.ts";
import { encodeDeltaResponse, resourceEntry } from "./delta_wire.ts";

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
  /** A proxy acknowledged a response; `pushedAt` is when the push that produced it began (ms). */
  onAck?(stream: AdsStreamStatus, typeUrl: string, pushedAt: number): void;
  /** A response was written; `ms` is how long generating and writing it took (disco_xds_push_time). */
  onSend?(stream: AdsStreamStatus, typeUrl: string, resources: number, bytes: number, ms: number): void;
  /** A request carried a nonce that is not the latest sent (disco_xds_expired_nonce). */
  onExpiredNonce?(stream: AdsStreamStatus, typeUrl: string): void;
}

/** Observers, plus flow control. */
export interface AdsServerOptions extends AdsHooks {
  /**
   * DISCO_PUSH_THROTTLE: how many streams may be sending at once (a response written and not yet
   * handed to the connection, which HTTP/2 flow control paces by how fast the proxy reads). Bounds
   * what meshd buffers when thousands of proxies connect or a push reaches them all: without it
   * every response would queue in memory at once. 0 or unset: 1000 (the byte budget below bounds the
   * memory; measured on 2 cores, 1000 converged faster than Istio's 100 at 10,000 proxies).
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

/** What /debug/syncz shows for one stream and type. */
export interface TypeSyncStatus {
  typeUrl: string;
  /** Resource names subscribed, or `*` for a wildcard subscription. */
  subscribed: string[] | "*";
  lastSentVersion: string;
  lastSentNonce: string;
  lastAckedVersion: string;
  lastAckedNonce: string;
  /** The message of the last NACK, if the latest response was rejected. */
  lastNack?: string;
  nacks: number;
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

interface TypeState {
  typeUrl: string;
  wildcard: boolean;
  names: Set<string>;
  /** What the proxy holds once everything sent is ACKed: name to version. */
  sent: Map<string, string>;
  /**
   * What the proxy last acknowledged holding. Usually the same Map object as `sent` (copy on write:
   * one map per stream and type in the steady state, which is what 10,000 proxies cost).
   */
  acked: Map<string, string>;
  /** The list version last diffed into `sent`; equal means nothing to send. */
  lastListVersion: string;
  /** The nonce whose ACK or NACK was last counted, so a repeated ACK is not counted twice. */
  lastAnswered: string;
  /** Nonces of the leading chunks of a split update: their ACKs are expected, not stale. */
  chunkNonces: Set<string>;
  lastSentVersion: string;
  lastSentNonce: string;
  lastAckedVersion: string;
  lastAckedNonce: string;
  lastNack?: string;
  nacks: number;
  pushStartedAt: number;
}

// deno-lint-ignore no-explicit-any
type Message = Record<string, any>;

/** The aggregated discovery service over a generator. */
export class AdsServer {
  readonly #generator: ResourceGenerator;
  readonly #hooks: AdsHooks;
  readonly #authorize: AdsServerOptions["authorize"];
  readonly #debug: DebugResponder | undefined;
  readonly #streams = new Map<string, Stream>();
  readonly #queue: Stream[] = [];
  readonly #limit: number;
  readonly #sendTimeoutMs: number;
  readonly #maxBytes: number;
  #inFlight = 0;
  #inFlightBytes = 0;
  #nextId = 0;

  /** @param generator produces resources; @param options observers, and the push throttle */
  constructor(generator: ResourceGenerator, options: AdsServerOptions = {}) {
    this.#generator = generator;
    this.#hooks = options;
    this.#authorize = options.authorize;
    this.#debug = options.debug;
    this.#limit = options.pushThrottle && options.pushThrottle > 0 ? options.pushThrottle : 1000;
    this.#sendTimeoutMs = options.sendTimeoutMs ?? 5000;
    this.#maxBytes = options.maxInFlightBytes ?? 32 * 1024 * 1024;
  }

  /** Streams waiting for a push slot (the push queue's depth). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Streams holding a push slot now (a response written and not yet sent). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Registers the ADS service on a gRPC server (plain or mutual TLS alike). */
  register(server: Pick<grpc.Server, "addService">, transport: XdsTransport = "plaintext"): void {
    server.addService(preEncodedDelta(adsProtocol().service), {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<Message, Message>) =>
        this.#open(call, "sotw", transport),
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<Message, Message>) =>
        this.#open(call, "delta", transport),
    });
  }

  /**
   * Sends every stream what changed since its last response, after the generator's push context
   * changed. Types whose resources did not change for a proxy send nothing in delta.
   *
   * @param changedAt when the change that caused the push happened (ms since the epoch), so that
   *   ACKs measure convergence from the change, not from the push
   */
  push(changedAt: number = Date.now()): void {
    for (const s of this.#streams.values()) {
      s.requestPush(changedAt);
      this.#schedule(s);
    }
    this.#drain();
  }

  #schedule(s: Stream): void {
    if (s.queued || s.holding || s.closed || !s.hasPending()) return;
    s.queued = true;
    this.#queue.push(s);
  }

  #drain(): void {
    while (this.#inFlight < this.#limit && this.#inFlightBytes < this.#maxBytes && this.#queue.length > 0) {
      const s = this.#queue.shift()!;
      s.queued = false;
      if (s.closed) continue;
      const bytes = s.flushPending();
      if (bytes < 0) continue;
      s.holding = true;
      s.heldBytes = bytes;
      this.#inFlight++;
      this.#inFlightBytes += bytes;
      s.slotTimer = setTimeout(() => this.#release(s), this.#sendTimeoutMs);
    }
  }

  /** A stream's writes all completed, it timed out, or it closed: its slot is free. */
  #release(s: Stream): void {
    if (s.holding) {
      s.holding = false;
      this.#inFlight--;
      this.#inFlightBytes -= s.heldBytes;
      s.heldBytes = 0;
      clearTimeout(s.slotTimer);
    }
    this.#schedule(s);
    this.#drain();
  }

  /** The streams, for debug endpoints. */
  streams(): AdsStreamStatus[] {
    return [...this.#streams.values()].map((s) => s.status());
  }

  /** Number of connected streams (disco_xds). */
  get connected(): number {
    return this.#streams.size;
  }

  /** Ends every stream, so that proxies reconnect elsewhere (graceful shutdown). */
  closeAll(): void {
    for (const s of this.#streams.values()) s.close();
  }

  #open(
    call: grpc.ServerDuplexStream<Message, Message>,
    protocol: "delta" | "sotw",
    transport: XdsTransport,
  ): void {
    const stream = new Stream(call, protocol, this.#generator, this.#hooks, {
      authorize: this.#authorize,
      debug: this.#debug,
      transport,
    }, {
      register: (s) => {
        s.id = `${s.node.id}-${++this.#nextId}`;
        this.#streams.set(s.id, s);
        this.#hooks.onConnect?.(s.status());
      },
      unregister: (s) => {
        if (this.#streams.delete(s.id)) this.#hooks.onDisconnect?.(s.status());
        this.#release(s);
      },
      schedule: (s) => {
        this.#schedule(s);
        this.#drain();
      },
      settled: (s) => this.#release(s),
    });
    stream.start();
  }
}

interface StreamRegistry {
  register(s: Stream): void;
  unregister(s: Stream): void;
  /** The stream has something to send: queue it for a push slot. */
  schedule(s: Stream): void;
  /** Every response the stream wrote was sent: release its slot. */
  settled(s: Stream): void;
}

class Stream {
  id = "";
  node: ProxyNode = { id: "", cluster: "", metadata: {} };
  queued = false;
  holding = false;
  /** Bytes of the responses this stream is sending while it holds a slot. */
  heldBytes = 0;
  slotTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #types = new Map<string, TypeState>();
  readonly #connectedAt = Date.now();
  /** Types whose request must be answered, even with nothing new. */
  readonly #answer = new Set<TypeState>();
  /** Set by a push: when the change happened. */
  #pushAt: number | undefined;
  /** Responses written and not yet sent. */
  #outstanding = 0;
  /** Bytes written by the current flushPending. */
  #flushedBytes = 0;
  #nonce = 0;
  #closed = false;
  /** Debug requests being answered (authentication is asynchronous). */
  #debugPending = 0;
  /** The client half-closed while debug answers were pending: end once they are written. */
  #endAfterDebug = false;

  constructor(
    readonly call: grpc.ServerDuplexStream<Message, Message>,
    readonly protocol: "delta" | "sotw",
    readonly generator: ResourceGenerator,
    readonly hooks: AdsHooks,
    readonly access: Pick<AdsServerOptions, "authorize" | "debug"> & { transport: XdsTransport },
    readonly registry: StreamRegistry,
  ) {}

  start(): void {
    this.call.on("data", (req: Message) => {
      try {
        this.#onRequest(req);
      } catch (e) {
        this.#fail(grpc.status.INVALID_ARGUMENT, (e as Error).message);
      }
    });
    const end = () => this.#end();
    // The client half-closed (a debug client that has its answer): end our side too, with OK, so
    // that it can close its connection on a finished stream.
    this.call.on("end", () => {
      if (this.#debugPending > 0) return void (this.#endAfterDebug = true);
      if (!this.#closed) this.call.end();
      end();
    });
    this.call.on("error", end);
    this.call.on("close", end);
    this.call.on("cancelled", end);
  }

  /** Ends the stream with a gRPC status the client sees (grpc-js turns an "error" event into one). */
  #fail(code: grpc.status, details: string): void {
    this.call.emit("error", { code, details });
    this.#end();
  }

  close(): void {
    if (this.#closed) return;
    this.call.end();
    this.#end();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.registry.unregister(this);
  }

  #onRequest(req: Message): void {
    if (this.node.id === "") {
      const n = req.node ?? {};
      this.node = { id: n.id ?? "", cluster: n.cluster ?? "", metadata: structToJson(n.metadata) };
      if (this.node.id === "") throw new Error("the first request of a stream must carry node.id");
    }
    if (isDebugTypeUrl(req.typeUrl ?? "")) return this.#onDebug(req);
    if (this.id === "") {
      const auth = this.access.authorize?.(this.call, this.node, this.access.transport);
      if (auth !== undefined && !auth.ok) return this.#fail(grpc.status.PERMISSION_DENIED, auth.reason);
      if (auth?.verifiedIdentity !== undefined) this.node.verifiedIdentity = auth.verifiedIdentity;
      this.registry.register(this);
    }
    const typeUrl: string = req.typeUrl ?? "";
    if (typeUrl === "") throw new Error("request without type_url");
    if (this.protocol === "delta") this.#onDelta(typeUrl, req);
    else this.#onSotw(typeUrl, req);
  }

  /**
   * A debug request: answered once, never tracked as a subscription or pushed again (Istio's ads.go
   * "don't let xDS piggyback debug requests start watchers").
   */
  #onDebug(req: Message): void {
    const typeUrl: string = req.typeUrl;
    // An ACK of a debug answer asks for nothing; answering it would loop with a client that ACKs.
    if (req.responseNonce) return;
    const debug = this.access.debug;
    if (!debug) return this.#fail(grpc.status.UNIMPLEMENTED, `type ${typeUrl} is not served by meshd`);
    const names: string[] = this.protocol === "delta"
      ? (req.resourceNamesSubscribe ?? [])
      : (req.resourceNames ?? []);
    this.#debugPending++;
    debug(this.call, { typeUrl, resourceNames: names, node: this.node, transport: this.access.transport })
      .then(
        (answer) => this.#writeDebug(typeUrl, answer),
        (e) => this.#fail(grpc.status.INTERNAL, `${typeUrl}: ${(e as Error).message}`),
      ).finally(() => {
        if (--this.#debugPending > 0 || !this.#endAfterDebug) return;
        if (!this.#closed) this.call.end();
        this.#end();
      });
  }

  #writeDebug(typeUrl: string, answer: DebugAnswer): void {
    if (this.#closed) return;
    if (!answer.ok) return this.#fail(answer.code, answer.details);
    const nonce = `debug-${++this.#nonce}`;
    const version = this.generator.version();
    this.call.write(
      this.protocol === "delta"
        ? {
          systemVersionInfo: version,
          typeUrl,
          resources: answer.resources.map((r) => ({
            name: r.name,
            version,
            resource: anyOf(r.typeUrl, r.body),
          })),
          nonce,
        }
        : {
          versionInfo: version,
          typeUrl,
          resources: answer.resources.map((r) => anyOf(r.typeUrl, r.body)),
          nonce,
        },
    );
  }

  #state(typeUrl: string): TypeState | undefined {
    return this.#types.get(typeUrl);
  }

  #newState(typeUrl: string): TypeState {
    const st: TypeState = {
      typeUrl,
      wildcard: false,
      names: new Set(),
      sent: new Map(),
      acked: new Map(),
      lastSentVersion: "",
      lastSentNonce: "",
      lastAckedVersion: "",
      lastAckedNonce: "",
      lastListVersion: "",
      lastAnswered: "",
      chunkNonces: new Set(),
      nacks: 0,
      pushStartedAt: Date.now(),
    };
    this.#types.set(typeUrl, st);
    return st;
  }

  /** Handles the nonce of a request; returns false when it answers an outdated response. */
  #ackOrNack(st: TypeState, req: Message): boolean {
    const nonce: string = req.responseNonce ?? "";
    if (nonce === "") return true;
    if (st.chunkNonces.delete(nonce)) {
      // An ACK of a leading chunk: the update is acknowledged with its last chunk's nonce. A NACK of
      // one is remembered, so that the whole update counts as rejected.
      const detail = req.errorDetail;
      if (detail && (detail.code || detail.message)) {
        st.lastNack = String(detail.message ?? `code ${detail.code}`);
      }
      return false;
    }
    if (nonce !== st.lastSentNonce || st.lastAnswered === nonce) {
      this.hooks.onExpiredNonce?.(this.status(), st.typeUrl);
      return false;
    }
    st.lastAnswered = nonce;
    const detail = req.errorDetail;
    if (detail && (detail.code || detail.message)) {
      st.nacks++;
      st.lastNack = String(detail.message ?? `code ${detail.code}`);
      // The proxy kept what it had: the next push must diff against that, not against the rejected set.
      st.sent = st.acked;
      st.lastListVersion = "";
      this.hooks.onNack?.(this.status(), st.typeUrl, st.lastNack);
    } else {
      st.lastNack = undefined;
      st.acked = st.sent;
      st.lastAckedNonce = nonce;
      st.lastAckedVersion = st.lastSentVersion;
      this.hooks.onAck?.(this.status(), st.typeUrl, st.pushStartedAt);
    }
    return false;
  }

  #onDelta(typeUrl: string, req: Message): void {
    let st = this.#state(typeUrl);
    const subscribe: string[] = req.resourceNamesSubscribe ?? [];
    const unsubscribe: string[] = req.resourceNamesUnsubscribe ?? [];
    if (!st) {
      st = this.#newState(typeUrl);
      // A first request that names nothing is a wildcard subscription (xDS protocol, "wildcard").
      st.wildcard = subscribe.length === 0 || subscribe.includes("*");
      const initial: Record<string, string> = req.initialResourceVersions ?? {};
      for (const [name, version] of Object.entries(initial)) st.sent.set(name, version);
      st.acked = st.sent;
    } else if (this.#ackOrNack(st, req) === false && subscribe.length === 0 && unsubscribe.length === 0) {
      return;
    }
    for (const name of subscribe) {
      if (name === "*") st.wildcard = true;
      else st.names.add(name);
    }
    for (const name of unsubscribe) {
      if (name === "*") st.wildcard = false;
      else st.names.delete(name);
      // Forget it so that a later subscribe sends it again.
      this.#writableSent(st).delete(name);
    }
    st.lastListVersion = "";
    this.#answer.add(st);
    this.registry.schedule(this);
  }

  #onSotw(typeUrl: string, req: Message): void {
    let st = this.#state(typeUrl);
    const names: string[] = req.resourceNames ?? [];
    if (!st) st = this.#newState(typeUrl);
    else if (this.#ackOrNack(st, req) === false && sameNames(st, names)) return;
    st.wildcard = names.length === 0 || names.includes("*");
    st.names = new Set(names.filter((n) => n !== "*"));
    // A first request or a changed subscription is answered even when the version did not move.
    this.#answer.add(st);
    this.registry.schedule(this);
  }

  /** Notes a push; the server calls flushPending when this stream gets a slot. */
  requestPush(at: number): void {
    this.#pushAt = Math.min(this.#pushAt ?? at, at);
  }

  hasPending(): boolean {
    return this.#answer.size > 0 || this.#pushAt !== undefined;
  }

  /** Writes what is pending: answers to requests, then the push. Returns the bytes written, or -1 for none. */
  flushPending(): number {
    const before = this.#outstanding;
    this.#flushedBytes = 0;
    const now = Date.now();
    const pushAt = this.#pushAt;
    this.#pushAt = undefined;
    const answer = new Set(this.#answer);
    this.#answer.clear();
    for (const st of this.#types.values()) {
      if (this.#closed) break;
      const isAnswer = answer.has(st);
      if (!isAnswer && pushAt === undefined) continue;
      const at = isAnswer ? now : pushAt!;
      if (this.protocol === "delta") this.#pushDelta(st, at, isAnswer);
      else this.#pushSotw(st, at, isAnswer);
    }
    return this.#outstanding > before ? this.#flushedBytes : -1;
  }

  #wanted(st: TypeState, name: string): boolean {
    return st.wildcard || st.names.has(name);
  }

  /** `sent` for mutation: a copy when it is shared (with `acked`, or a list index of many streams). */
  #writableSent(st: TypeState): Map<string, string> {
    if (st.sent === st.acked || SHARED_INDEXES.has(st.sent)) st.sent = new Map(st.sent);
    return st.sent;
  }

  #pushDelta(st: TypeState, at: number, answer: boolean): void {
    const started = performance.now();
    const list = this.generator.generate(this.node, st.typeUrl);
    if (list === undefined) return this.#unknownType(st);
    if (!answer && list.version === st.lastListVersion) return;
    st.lastListVersion = list.version;
    const version = this.generator.version();
    // A pure wildcard stream ends up holding exactly the list, so it shares the list's index with
    // every other such stream instead of keeping a map of its own.
    const wildcardOnly = st.wildcard && st.names.size === 0;
    const index = listIndex(list);
    const present = wildcardOnly ? index : new Set<string>();
    const changed: GeneratedResource[] = [];
    let bytes = 0;
    for (const r of list.resources) {
      if (!wildcardOnly) {
        if (!this.#wanted(st, r.name)) continue;
        (present as Set<string>).add(r.name);
      }
      if (st.sent.get(r.name) === r.version) continue;
      bytes += r.body.length;
      changed.push(r);
    }
    const removed: string[] = [];
    for (const name of st.sent.keys()) {
      if (!present.has(name)) removed.push(name);
    }
    if (wildcardOnly) st.sent = index;
    else {
      const sent = this.#writableSent(st);
      for (const r of changed) sent.set(r.name, r.version);
      for (const name of removed) sent.delete(name);
    }
    const entries = changed.map((r) => resourceEntry(st.typeUrl, r));
    // Explicitly subscribed names that do not exist are reported as removed, so the proxy stops waiting.
    if (answer) {
      for (const name of st.names) if (!present.has(name) && !removed.includes(name)) removed.push(name);
    }
    if (entries.length === 0 && removed.length === 0 && !(answer && st.lastSentNonce === "")) return;
    st.pushStartedAt = at;
    // Large updates go out as several responses of about CHUNK_BYTES each: the runtime's HTTP/2 layer
    // keeps each stream's buffer at the size of its largest write, so one 250 KB first sync per proxy
    // would cost 250 KB of memory per proxy for as long as it stays connected.
    let from = 0;
    while (true) {
      let to = from;
      let chunkBytes = 0;
      while (to < entries.length && (to === from || chunkBytes + changed[to].body.length <= CHUNK_BYTES)) {
        chunkBytes += changed[to].body.length;
        to++;
      }
      const last = to >= entries.length;
      if (!last) st.chunkNonces.add(String(this.#nonce + 1));
      const chunk = entries.slice(from, to);
      this.#write(
        st,
        version,
        (nonce) =>
          encodeDeltaResponse({
            systemVersionInfo: version,
            typeUrl: st.typeUrl,
            entries: chunk,
            removed: last ? removed : [],
            nonce,
          }),
        { count: to - from, bytes: chunkBytes, started },
      );
      if (last) break;
      from = to;
    }
  }

  #pushSotw(st: TypeState, at: number, answer: boolean): void {
    const started = performance.now();
    const list = this.generator.generate(this.node, st.typeUrl);
    if (list === undefined) return this.#unknownType(st);
    const version = this.generator.version();
    if (!answer && (version === st.lastSentVersion || list.version === st.lastListVersion)) return;
    st.lastListVersion = list.version;
    const chosen = list.resources.filter((r) => this.#wanted(st, r.name));
    st.sent = new Map(chosen.map((r) => [r.name, r.version]));
    st.pushStartedAt = at;
    const bytes = chosen.reduce((n, r) => n + r.body.length, 0);
    this.#write(
      st,
      version,
      {
        versionInfo: version,
        typeUrl: st.typeUrl,
        resources: chosen.map((r) => anyOf(st.typeUrl, r.body)),
      },
      { count: chosen.length, bytes, started },
    );
  }

  /** Writes a response: a message for grpc-js to encode, or the bytes of one, given the nonce. */
  #write(
    st: TypeState,
    version: string,
    response: Message | ((nonce: string) => Uint8Array),
    sizes: { count: number; bytes: number; started: number },
  ): void {
    if (this.#closed) return;
    const nonce = String(++this.#nonce);
    st.lastSentNonce = nonce;
    st.lastSentVersion = version;
    this.#outstanding++;
    this.#flushedBytes += sizes.bytes;
    this.call.write(typeof response === "function" ? response(nonce) : { ...response, nonce }, () => {
      if (--this.#outstanding === 0) this.registry.settled(this);
    });
    this.hooks.onSend?.(
      this.status(),
      st.typeUrl,
      sizes.count,
      sizes.bytes,
      performance.now() - sizes.started,
    );
  }

  #unknownType(st: TypeState): void {
    this.#types.delete(st.typeUrl);
    this.#fail(grpc.status.UNIMPLEMENTED, `type ${st.typeUrl} is not served by meshd`);
  }

  status(): AdsStreamStatus {
    return {
      id: this.id,
      node: this.node,
      protocol: this.protocol,
      peer: this.call.getPeer(),
      connectedAt: this.#connectedAt,
      types: [...this.#types.values()].map((st) => ({
        typeUrl: st.typeUrl,
        subscribed: st.wildcard ? "*" : [...st.names].sort(),
        lastSentVersion: st.lastSentVersion,
        lastSentNonce: st.lastSentNonce,
        lastAckedVersion: st.lastAckedVersion,
        lastAckedNonce: st.lastAckedNonce,
        lastNack: st.lastNack,
        nacks: st.nacks,
      })),
    };
  }
}

/** The ADS service definition, with delta responses that are already bytes written as they are. */
function preEncodedDelta(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const delta = service.DeltaAggregatedResources;
  return {
    ...service,
    DeltaAggregatedResources: {
      ...delta,
      responseSerialize: (m: unknown) =>
        m instanceof Uint8Array
          ? Buffer.from(m.buffer, m.byteOffset, m.byteLength)
          : delta.responseSerialize(m as never),
    },
  };
}

/** Target size of one delta response, bytes. */
const CHUNK_BYTES = 8 * 1024;

/** Name-to-version maps of generated lists, shared by every stream that holds exactly that list. */
const LIST_INDEXES = new WeakMap<GeneratedList, Map<string, string>>();
const SHARED_INDEXES = new WeakSet<Map<string, string>>();

function listIndex(list: GeneratedList): Map<string, string> {
  let index = LIST_INDEXES.get(list);
  if (!index) {
    index = new Map(list.resources.map((r) => [r.name, r.version]));
    LIST_INDEXES.set(list, index);
    SHARED_INDEXES.add(index);
  }
  return index;
}

/** A google.protobuf.Any; protobufjs keeps Any's snake_case field name even with camelCase options. */
function anyOf(typeUrl: string, body: Uint8Array): Message {
  return { type_url: typeUrl, value: body };
}

function sameNames(st: TypeState, names: string[]): boolean {
  const wildcard = names.length === 0 || names.includes("*");
  if (wildcard !== st.wildcard) return false;
  const set = new Set(names.filter((n) => n !== "*"));
  return set.size === st.names.size && [...set].every((n) => st.names.has(n));
}
