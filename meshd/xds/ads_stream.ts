/**
 * One ADS stream: reads requests (subscriptions, ACK/NACK by nonce, debug requests), and writes what
 * the generator produces that the proxy does not hold yet, in delta (DeltaAggregatedResources) or
 * state-of-the-world (StreamAggregatedResources) form. The server (ads_server.ts) decides when a
 * stream may write (push slots).
 *
 * Protocol: envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { structToJson } from "../../shared/internal/xds/struct.ts";
import {
  type AdsHooks,
  type AdsServerOptions,
  type AdsStreamStatus,
  type DebugAnswer,
  isDebugTypeUrl,
  type Message,
  type ProxyNode,
  type ResourceGenerator,
  type XdsTransport,
} from "./ads_types.ts";
import { deltaUpdate, emptyUpdate } from "./delta_diff.ts";
import type { NoncedBytes } from "./delta_wire.ts";
import { sotwResponse } from "./sotw_response.ts";
import { newTypeState, sameNames, syncStatusOf, type TypeState, writableSent } from "./type_state.ts";

/** One push: when it started, and how many of its streams are still to be served. */
export interface PushRound {
  started: number;
  streams: number;
  remaining: number;
}

/** How a stream tells the server about itself (the server owns registration and push slots). */
export interface StreamRegistry {
  register(s: Stream): void;
  unregister(s: Stream): void;
  /** The stream has something to send: queue it for a push slot. */
  schedule(s: Stream): void;
  /** Every response the stream wrote was sent: release its slot. */
  settled(s: Stream): void;
}

/** One ADS stream (delta or state of the world): requests, ACK/NACK, pushes, debug answers. */
export class Stream {
  id = "";
  node: ProxyNode = { id: "", cluster: "", metadata: {} };
  queued = false;
  holding = false;
  /** Bytes of the responses this stream is sending while it holds a slot. */
  heldBytes = 0;
  /** When it took its slot (performance.now()): the server's sweep frees slots held too long. */
  heldSince = 0;
  /** The pushes this stream has yet to be served for (the server's fan-out bookkeeping). */
  rounds: PushRound[] = [];
  readonly #types = new Map<string, TypeState>();
  readonly #connectedAt = Date.now();
  /** Types whose request must be answered, even with nothing new. */
  #answer = new Set<TypeState>();
  /** The other of the two answer sets: flushPending swaps them instead of copying one per push. */
  #answering = new Set<TypeState>();
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
    readonly access: Pick<AdsServerOptions, "authorize" | "debug" | "responseBytes"> & {
      transport: XdsTransport;
    },
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
    const st = newTypeState(typeUrl);
    this.#types.set(typeUrl, st);
    return st;
  }

  /** Handles the nonce of a request; returns false when it answers an outdated response. */
  #ackOrNack(st: TypeState, req: Message): boolean {
    const nonce: string = req.responseNonce ?? "";
    if (nonce === "") return true;
    if (st.chunkNonces.delete(nonce)) {
      // An ACK of a leading chunk: the update is acknowledged with its last chunk's nonce. A NACK of
      // one is remembered, so that the whole update counts as rejected: the proxy kept its old
      // versions of that chunk's resources, and the next push must send them again.
      const detail = req.errorDetail;
      if (detail && (detail.code || detail.message)) {
        st.chunkNack ??= String(detail.message ?? `code ${detail.code}`);
      }
      return false;
    }
    if (nonce !== st.lastSentNonce || st.lastAnswered === nonce) {
      this.hooks.onExpiredNonce?.(this.status(), st.typeUrl);
      return false;
    }
    st.lastAnswered = nonce;
    const detail = req.errorDetail;
    const chunkNack = st.chunkNack;
    st.chunkNack = undefined;
    const nack = detail && (detail.code || detail.message)
      ? String(detail.message ?? `code ${detail.code}`)
      : chunkNack;
    if (nack !== undefined) {
      st.nacks++;
      st.lastNack = nack;
      // The proxy kept what it had: the next push must diff against that, not against the rejected set.
      st.sent = st.acked;
      st.lastListVersion = "";
      this.hooks.onNack?.(this.status(), st.typeUrl, nack);
    } else {
      st.lastNack = undefined;
      st.acked = st.sent;
      st.lastAckedNonce = nonce;
      st.lastAckedVersion = st.lastSentVersion;
      this.hooks.onAck?.(this, st.typeUrl, st.pushStartedAt);
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
      writableSent(st).delete(name);
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
    const answer = this.#answer;
    this.#answer = this.#answering;
    this.#answering = answer;
    for (const st of this.#types.values()) {
      if (this.#closed) break;
      const isAnswer = answer.has(st);
      if (!isAnswer && pushAt === undefined) continue;
      const at = isAnswer ? now : pushAt!;
      if (this.protocol === "delta") this.#pushDelta(st, at, isAnswer);
      else this.#pushSotw(st, at, isAnswer);
    }
    answer.clear();
    return this.#outstanding > before ? this.#flushedBytes : -1;
  }

  #pushDelta(st: TypeState, at: number, answer: boolean): void {
    const started = performance.now();
    const list = this.generator.generate(this.node, st.typeUrl);
    if (list === undefined) return this.#unknownType(st);
    if (!answer && list.version === st.lastListVersion) return;
    st.lastListVersion = list.version;
    const version = this.generator.version();
    let responses = deltaUpdate(st, list, version, answer, this.access.responseBytes);
    if (responses.length === 0) {
      // A first request is answered even when nothing exists for the proxy, so it stops waiting.
      if (!(answer && st.lastSentNonce === "")) return;
      responses = [emptyUpdate(st.typeUrl, version)];
    }
    st.pushStartedAt = at;
    for (const r of responses) {
      if (!r.last) st.chunkNonces.add(String(this.#nonce + 1));
      this.#write(st, version, r.encode, r.count, r.bytes, started);
    }
  }

  #pushSotw(st: TypeState, at: number, answer: boolean): void {
    const started = performance.now();
    const list = this.generator.generate(this.node, st.typeUrl);
    if (list === undefined) return this.#unknownType(st);
    const version = this.generator.version();
    if (!answer && (version === st.lastSentVersion || list.version === st.lastListVersion)) return;
    st.lastListVersion = list.version;
    const r = sotwResponse(st, list, version);
    st.pushStartedAt = at;
    this.#write(st, version, r.encode, r.count, r.bytes, started);
  }

  /**
   * Writes a response, its bytes given the nonce (the encoding is shared by every stream that sends
   * it); `count`, `bytes` and `started` are what onSend reports.
   */
  #write(
    st: TypeState,
    version: string,
    encode: (nonce: string) => NoncedBytes,
    count: number,
    bytes: number,
    started: number,
  ): void {
    if (this.#closed) return;
    const nonce = String(++this.#nonce);
    st.lastSentNonce = nonce;
    st.lastSentVersion = version;
    this.#outstanding++;
    this.#flushedBytes += bytes;
    this.call.write(encode(nonce), this.#written);
    this.hooks.onSend?.(this, st.typeUrl, count, bytes, performance.now() - started);
  }

  /** A write completed: one closure per stream, not one per write. */
  readonly #written = (): void => {
    if (--this.#outstanding === 0) this.registry.settled(this);
  };

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
      types: [...this.#types.values()].map(syncStatusOf),
    };
  }
}

/** A google.protobuf.Any; protobufjs keeps Any's snake_case field name even with camelCase options. */
function anyOf(typeUrl: string, body: Uint8Array): Message {
  return { type_url: typeUrl, value: body };
}
