/**
 * The ADS server: Envoy's AggregatedDiscoveryService, both StreamAggregatedResources (state of the
 * world) and DeltaAggregatedResources (incremental), over one gRPC server. It knows nothing of
 * policies: a {@link ResourceGenerator} turns the current push context into each proxy's resources.
 * This module registers the service, keeps the streams and hands out push slots (flow control); each
 * stream's requests and responses are ads_stream.ts, its per-type tracking type_state.ts, and the
 * shapes (nodes, generators, hooks, debug requests) ads_types.ts.
 *
 * Protocol: envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol (ACK/NACK, nonces, wildcard
 * subscriptions, delta subscribe/unsubscribe and initial_resource_versions).
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";
import { type PushRound, Stream } from "./ads_stream.ts";
import { NoncedBytes } from "./delta_wire.ts";
import type {
  AdsHooks,
  AdsServerOptions,
  AdsStreamStatus,
  DebugResponder,
  Message,
  ProxyNode,
  ResourceGenerator,
  XdsTransport,
} from "./ads_types.ts";

/** The aggregated discovery service over a generator. */
export class AdsServer {
  readonly #generator: ResourceGenerator;
  readonly #hooks: AdsHooks;
  readonly #authorize: AdsServerOptions["authorize"];
  readonly #debug: DebugResponder | undefined;
  readonly #responseBytes: number | undefined;
  readonly #streams = new Map<string, Stream>();
  /** Streams waiting for a slot, from #head on (an index, not shift(): a push queues every stream). */
  #queue: (Stream | undefined)[] = [];
  #head = 0;
  /** Streams holding a slot, oldest first: one sweep timer frees those held too long. */
  readonly #held = new Set<Stream>();
  #sweep: ReturnType<typeof setInterval> | undefined;
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
    this.#responseBytes = options.responseBytes;
    this.#limit = options.pushThrottle && options.pushThrottle > 0 ? options.pushThrottle : 1000;
    this.#sendTimeoutMs = options.sendTimeoutMs ?? 5000;
    this.#maxBytes = options.maxInFlightBytes ?? 32 * 1024 * 1024;
  }

  /** DISCO_PUSH_THROTTLE in force: most streams sending at once. */
  get pushThrottle(): number {
    return this.#limit;
  }

  /** Streams waiting for a push slot (the push queue's depth). */
  get queued(): number {
    return this.#queue.length - this.#head;
  }

  /** Streams holding a push slot now (a response written and not yet sent). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Registers the ADS service on a gRPC server (plain or mutual TLS alike). */
  register(server: Pick<grpc.Server, "addService">, transport: XdsTransport = "plaintext"): void {
    server.addService(preEncoded(adsProtocol().service), {
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
   * @param only the streams to push, by node, when the change concerns only some (an incremental
   *   push); default every stream
   */
  push(changedAt: number = Date.now(), only?: (node: ProxyNode) => boolean): void {
    const round: PushRound = { started: performance.now(), streams: 0, remaining: 0 };
    for (const s of this.#streams.values()) {
      if (only !== undefined && !only(s.node)) continue;
      round.streams++;
      s.requestPush(changedAt);
      s.rounds.push(round);
      round.remaining++;
      this.#schedule(s);
    }
    this.#drain();
  }

  /** The stream was served (or is gone): it no longer holds back the pushes it was waiting for. */
  #served(s: Stream): void {
    if (s.rounds.length === 0) return;
    const now = performance.now();
    this.#hooks.onProxyQueued?.(now - s.rounds[0].started);
    for (const round of s.rounds) {
      if (--round.remaining === 0) this.#hooks.onPushFanout?.(now - round.started, round.streams);
    }
    s.rounds.length = 0;
  }

  #schedule(s: Stream): void {
    if (s.queued || s.holding || s.closed || !s.hasPending()) return;
    s.queued = true;
    this.#queue.push(s);
  }

  #drain(): void {
    const queue = this.#queue;
    while (
      this.#inFlight < this.#limit && this.#inFlightBytes < this.#maxBytes && this.#head < queue.length
    ) {
      const s = queue[this.#head]!;
      queue[this.#head++] = undefined;
      s.queued = false;
      if (s.closed) continue;
      const bytes = s.flushPending();
      this.#served(s);
      if (bytes < 0) continue;
      s.holding = true;
      s.heldBytes = bytes;
      s.heldSince = performance.now();
      this.#inFlight++;
      this.#inFlightBytes += bytes;
      this.#held.add(s);
    }
    if (this.#head === queue.length) {
      queue.length = 0;
      this.#head = 0;
    }
    if (this.#held.size > 0) {
      this.#sweep ??= setInterval(() => this.#expire(), Math.max(10, this.#sendTimeoutMs / 4));
    }
  }

  /**
   * Frees the slots of streams whose writes did not complete within sendTimeoutMs (give or take a
   * quarter of it): one timer for all of them, not one per stream and push.
   */
  #expire(): void {
    const oldest = performance.now() - this.#sendTimeoutMs;
    for (const s of this.#held) {
      if (s.heldSince > oldest) break;
      this.#unhold(s);
      this.#schedule(s);
    }
    this.#drain();
    this.#stopSweepWhenIdle();
  }

  #unhold(s: Stream): void {
    if (!s.holding) return;
    s.holding = false;
    this.#inFlight--;
    this.#inFlightBytes -= s.heldBytes;
    s.heldBytes = 0;
    this.#held.delete(s);
  }

  #stopSweepWhenIdle(): void {
    if (this.#held.size > 0 || this.#sweep === undefined) return;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  /** A stream's writes all completed, or it closed: its slot is free. */
  #release(s: Stream): void {
    this.#unhold(s);
    this.#schedule(s);
    this.#drain();
    this.#stopSweepWhenIdle();
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
      responseBytes: this.#responseBytes,
      transport,
    }, {
      register: (s) => {
        s.id = `${s.node.id}-${++this.#nextId}`;
        this.#streams.set(s.id, s);
        this.#hooks.onConnect?.(s.status());
      },
      unregister: (s) => {
        if (this.#streams.delete(s.id)) this.#hooks.onDisconnect?.(s.status());
        this.#served(s);
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

/** The ADS service definition, with responses that are already bytes written as they are. */
function preEncoded(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const passBytes = (method: grpc.MethodDefinition<unknown, unknown>) => ({
    ...method,
    responseSerialize: (m: unknown) => {
      const bytes = m instanceof NoncedBytes ? m.join() : m;
      return bytes instanceof Uint8Array
        ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        : method.responseSerialize(m as never);
    },
  });
  return {
    ...service,
    DeltaAggregatedResources: passBytes(service.DeltaAggregatedResources),
    StreamAggregatedResources: passBytes(service.StreamAggregatedResources),
  };
}
