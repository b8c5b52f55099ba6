/**
 * A Delta ADS client (envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources)
 * for the agent, after Envoy's and Istio's xDS proxy: one stream subscribing to the mesh's four
 * resource types as wildcards; each response is decoded and checked as a whole, applied, and then
 * ACKed; a response with any resource that fails is NACKed (error_detail says which and why) and
 * none of it is applied, so the previous resources of that type stay in force.
 *
 * Connection: plain text (meshd's --grpcAddr) or mutual TLS with the workload certificate
 * (--secureGRPCAddr, where XDS_AUTH checks the certificate's namespace), as gRPC on the project's
 * HTTP/2 codec (ads_stream.ts, grpc_channel.ts). When the stream ends for any
 * reason the client reconnects after an exponential backoff with jitter (100 ms doubling to 30 s by
 * default; reset by the first response of a stream), on the same channel while the certificate is the
 * same (the channel dials again when its connection is gone), and tells meshd what
 * it holds in `initial_resource_versions`, so meshd sends only what changed meanwhile. What it holds
 * is never dropped while meshd is away.
 *
 * Several meshd replicas (`address` a comma-separated list): a stream that ends without having been
 * cancelled, or a connect that fails, moves the client to the next address (after the same backoff),
 * on a new channel; an answered stream keeps it where it is. Replicas serving the same config send the
 * same content-hash versions, so the reconnect to another replica ACKs what is held and changes nothing.
 *
 * A new certificate ({@link AdsClient.setCertificate}) is taken into use make-before-break: a second
 * stream opens with it, and the old one is cancelled when the new one has received its first
 * response; a failure of the new stream leaves the old one serving.
 *
 * @module
 */
import { adsChannel, AdsStream, type ClientCertificate, type Liveness, type Message } from "./ads_stream.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import type { AgentLogger } from "./certificate_manager.ts";
import { type AdsConfig, type Decoded, emptyHeld, type HeldByKind, INSTALL } from "./held_resources.ts";
import { type NodeOptions, workloadKey, xdsNode } from "./node.ts";
import { decodeXdsResource, deepFreeze, kindOf, type ResourceKind, SUBSCRIBED } from "./resources.ts";
import { GRPC_STATUS, type GrpcChannel, type GrpcStatus, STATUS_NAMES } from "./grpc_channel.ts";
import { AddressRing } from "./meshd_addresses.ts";

export type { AdsConfig, ClientCertificate };

/** The empty config, before meshd answers. */
export const EMPTY_ADS_CONFIG: AdsConfig = deepFreeze({
  versions: {},
  services: {},
  authorizations: {},
  jwtPolicies: {},
  routes: {},
  credentials: {},
});

/** Observers, for logs and tests; all optional. */
export interface AdsClientHooks {
  /** A stream received its first response and became the one in use. */
  onConnect?(stream: number): void;
  /** A stream ended; `reason` is the gRPC status. */
  onDisconnect?(stream: number, reason: string): void;
  /** A response arrived: what it carried (before checking). */
  onResponse?(typeUrl: string, resources: string[], removed: string[], stream: number): void;
  /** A response was applied and ACKed. */
  onAck?(typeUrl: string, version: string): void;
  /** A response was rejected. */
  onNack?(typeUrl: string, message: string): void;
  /** A reconnect was scheduled. */
  onRetry?(delayMs: number, attempt: number): void;
}

/** Options of {@link AdsClient}. */
export interface AdsClientOptions {
  /** meshd's address, `host:port`, or several (replicas) separated by commas: see the module doc. */
  address: string;
  /** This proxy. */
  node: NodeOptions;
  /** Plain text (meshd's --grpcAddr): no TLS, no certificate. */
  plaintext?: boolean;
  /** For mutual TLS: the roots of meshd's serving certificate, and the name it must carry. */
  rootsPem?: string;
  serverName?: string;
  /** For mutual TLS: the first certificate (later ones via setCertificate). */
  certificate?: ClientCertificate;
  /** Reconnect delays; default 100 ms doubling to 30 s, ±50 % jitter. */
  backoff?: BackoffOptions;
  /**
   * Keepalive probes on the stream's connection, ms between them; default 30,000 (a meshd that vanished
   * without a FIN is noticed within this plus `keepaliveTimeoutMs`; see ads_stream.ts). 0 turns them off.
   */
  keepaliveMs?: number;
  /** How long a keepalive probe waits for meshd's answer, ms; default 10,000. */
  keepaliveTimeoutMs?: number;
  /** How long a stream being closed waits for meshd's status after the half-close, ms; default 2,000. */
  closeGraceMs?: number;
  logger?: AgentLogger;
  hooks?: AdsClientHooks;
}

/** What the client is doing. */
export interface AdsClientStatus {
  /** A stream has received a response and is open. */
  connected: boolean;
  /** The meshd address in use, or tried next. */
  address: string;
  /** Streams opened since start. */
  streams: number;
  /** Failed connection attempts since the last success. */
  failures: number;
  lastError?: string;
  /** Last ACKed version per type URL. */
  acked: Record<string, string>;
  /**
   * The message of the last NACK per type URL, while a resource of a rejected response is still held at
   * its previous version (Envoy keeps a resource's error_state until it is updated): a later response
   * that brings other resources of the type (the next chunk of a split update) does not clear it.
   */
  nacked: Record<string, string>;
}

/** Longest error_detail message sent. */
const MAX_NACK_CHARS = 4096;

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The Delta ADS client. */
export class AdsClient {
  readonly #options: AdsClientOptions;
  readonly #backoff: Backoff;
  readonly #log: AgentLogger;
  readonly #hooks: AdsClientHooks;
  readonly #workloadKey: string;
  readonly #addresses: AddressRing;
  readonly #held: HeldByKind = emptyHeld();
  readonly #listeners = new Set<(config: AdsConfig, typeUrl: string) => void>();
  readonly #streams = new Set<AdsStream>();
  #config: AdsConfig = EMPTY_ADS_CONFIG;
  #certificate: ClientCertificate | undefined;
  #running = false;
  #nextId = 0;
  #latest: AdsStream | undefined;
  #active: AdsStream | undefined;
  /**
   * The channel new streams use, kept across reconnects while the certificate stays the same (one
   * connection rather than one per reconnect; see stop).
   */
  #channel: { client: GrpcChannel; certificate: string; address: string } | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #status: Pick<AdsClientStatus, "streams" | "failures" | "lastError"> = { streams: 0, failures: 0 };
  readonly #acked: Record<string, string> = {};
  readonly #nacked: Record<string, string> = {};
  /** Per type URL, the names of rejected resources not yet accepted since. */
  readonly #rejected = new Map<string, Set<string>>();

  /** @param options meshd's address, the node, security and timings */
  constructor(options: AdsClientOptions) {
    if (!options.plaintext && !options.rootsPem) {
      throw new Error("ADS over mutual TLS needs the roots of meshd's certificate (or plaintext: true)");
    }
    xdsNode(options.node); // checks the node now rather than at the first connect
    this.#options = options;
    this.#certificate = options.certificate;
    this.#backoff = new Backoff(options.backoff);
    this.#log = options.logger ?? { info() {}, warn() {} };
    this.#hooks = options.hooks ?? {};
    this.#workloadKey = workloadKey(options.node);
    this.#addresses = new AddressRing(options.address);
  }

  /** The resources held now (frozen). */
  get config(): AdsConfig {
    return this.#config;
  }

  /** Whether a stream is open and has been answered. */
  get connected(): boolean {
    return this.#active !== undefined && !this.#active.ended;
  }

  /** Counters and the last ACK/NACK per type. */
  status(): AdsClientStatus {
    return {
      connected: this.connected,
      address: this.#addresses.current,
      streams: this.#status.streams,
      failures: this.#status.failures,
      lastError: this.#status.lastError,
      acked: { ...this.#acked },
      nacked: { ...this.#nacked },
    };
  }

  /** Calls `listener` after every applied response that changed something. */
  onUpdate(listener: (config: AdsConfig, typeUrl: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Connects (now, or as soon as a certificate is set when mutual TLS needs one). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#connect();
  }

  /**
   * Ends every stream (half-close, then meshd's status, at most
   * {@link AdsClientOptions.closeGraceMs}) and closes its channel; the held resources stay readable.
   * With `exiting` (the process ends right after), the channels are left open for the kernel to close.
   * A channel's close destroys its sockets without a GOAWAY (grpc_channel.ts): a meshd that serves on
   * node:http2 (`--grpcTransport children`) can abort inside nghttp2 while it handles one
   * (denoland/deno#36788; tests/bench/goaway_stress.ts measured 24 aborts in 58,600 connections closed
   * with a GOAWAY, none in 7,000 closed by the kernel). Idempotent.
   *
   * @returns when every stream has ended
   */
  async stop(options: { exiting?: boolean } = {}): Promise<void> {
    this.#running = false;
    clearTimeout(this.#retryTimer);
    const closing = [...this.#streams].map((s) => this.#close(s, options.exiting));
    this.#streams.clear();
    this.#active = this.#latest = undefined;
    await Promise.all(closing);
    if (!options.exiting) this.#channel?.client.close();
    this.#channel = undefined;
  }

  /** Ends a stream; its channel is closed unless new streams use it or the process is exiting. */
  #close(stream: AdsStream, exiting = false): Promise<void> {
    const keep = exiting || stream.channel === this.#channel?.client;
    return stream.cancel(this.#options.closeGraceMs ?? 2000, keep);
  }

  /**
   * Uses a new workload certificate for mutual TLS: a new stream with it replaces the current one
   * once answered. `undefined` (expired) keeps the current stream; new connections wait for a
   * certificate.
   */
  setCertificate(certificate: ClientCertificate | undefined): void {
    if (this.#options.plaintext) return;
    const same = certificate?.certChainPem === this.#certificate?.certChainPem &&
      certificate?.privateKeyPem === this.#certificate?.privateKeyPem;
    this.#certificate = certificate;
    if (same || !certificate || !this.#running) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#connect();
  }

  #connect(): void {
    if (!this.#running) return;
    if (!this.#options.plaintext && !this.#certificate) {
      this.#log.info("ADS: waiting for the workload certificate before connecting to meshd");
      return;
    }
    const id = ++this.#nextId;
    this.#status.streams++;
    const certificate = this.#options.plaintext ? "" : this.#certificate!.certChainPem;
    const address = this.#addresses.current;
    if (this.#channel?.certificate !== certificate || this.#channel.address !== address) {
      // The old channel closes with the last stream on it (make-before-break), or now if it has none.
      const old = this.#channel?.client;
      if (old && ![...this.#streams].some((s) => s.channel === old)) old.close();
      this.#channel = { client: adsChannel(address, this.#options, this.#certificate), certificate, address };
    }
    const stream = new AdsStream(
      id,
      this.#channel.client,
      address,
      (s, res) => this.#onResponse(s, res),
      (s, status) => this.#onEnd(s, status),
      this.#liveness(),
    );
    this.#streams.add(stream);
    this.#latest = stream;
    const node = xdsNode(this.#options.node);
    for (const [i, { kind, typeUrl }] of SUBSCRIBED.entries()) {
      const held: ReadonlyMap<string, { version: string }> = this.#held[kind];
      stream.send({
        ...(i === 0 ? { node } : {}),
        typeUrl,
        resourceNamesSubscribe: ["*"],
        initialResourceVersions: Object.fromEntries([...held].map(([name, h]) => [name, h.version])),
      });
    }
    this.#log.debug?.(`ADS: stream ${id} opened to ${address}`);
  }

  #liveness(): Liveness | undefined {
    const intervalMs = this.#options.keepaliveMs ?? 30_000;
    return intervalMs > 0 ? { intervalMs, timeoutMs: this.#options.keepaliveTimeoutMs ?? 10_000 } : undefined;
  }

  #onEnd(stream: AdsStream, status: GrpcStatus): void {
    stream.settle();
    this.#streams.delete(stream);
    if (stream.cancelled) return;
    // A kept channel dials again for the next stream if its connection is gone.
    if (stream.channel !== this.#channel?.client) stream.channel.close();
    const reason = `${STATUS_NAMES[status.code] ?? status.code}: ${status.details}`;
    this.#hooks.onDisconnect?.(stream.id, reason);
    if (this.#active === stream) {
      this.#active = undefined;
      this.#log.warn(
        `ADS: stream ${stream.id} to meshd ${stream.address} ended (${reason}); keeping the last config`,
      );
    }
    if (this.#latest !== stream || !this.#running) return;
    this.#status.failures++;
    this.#status.lastError = reason;
    const next = this.#addresses.failed(stream.address);
    const delay = this.#backoff.next();
    this.#hooks.onRetry?.(delay, this.#backoff.attempts);
    this.#log.info(
      `ADS: reconnecting to ${next} in ${delay} ms (attempt ${this.#backoff.attempts}; ${reason})`,
    );
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#connect(), delay);
  }

  #onResponse(stream: AdsStream, res: Message): void {
    if (stream.cancelled || !this.#running) return;
    if (this.#active && stream !== this.#active && stream.id < this.#active.id) return;
    if (!stream.gotResponse) {
      stream.gotResponse = true;
      // The newest answered stream wins; older ones (an old certificate, a stale channel) go.
      for (const s of [...this.#streams]) {
        if (s.id < stream.id) {
          void this.#close(s);
          this.#streams.delete(s);
        }
      }
      this.#active = stream;
      this.#backoff.reset();
      this.#status.failures = 0;
      this.#status.lastError = undefined;
      this.#hooks.onConnect?.(stream.id);
      this.#log.info(`ADS: connected to ${stream.address} (stream ${stream.id})`);
    }
    const typeUrl: string = res.typeUrl ?? "";
    const resources: Message[] = res.resources ?? [];
    const removed: string[] = res.removedResources ?? [];
    this.#hooks.onResponse?.(typeUrl, resources.map((r) => r.name), removed, stream.id);
    const kind = kindOf(typeUrl);
    if (!kind) return this.#nack(stream, typeUrl, res.nonce, `type ${typeUrl} was not subscribed to`);
    this.#accept(stream, kind, typeUrl, res, resources, removed);
  }

  /** Decodes every resource of a response of `kind`: applies and ACKs them all, or NACKs them all. */
  #accept<K extends ResourceKind>(
    stream: AdsStream,
    kind: K,
    typeUrl: string,
    res: Message,
    resources: Message[],
    removed: string[],
  ): void {
    const decoded: Decoded<K>[] = [];
    const errors: string[] = [];
    const seen = new Set<string>();
    for (const r of resources) {
      const name = String(r.name ?? "");
      if (seen.has(name)) {
        errors.push(`resource ${JSON.stringify(name)}: sent twice`);
        continue;
      }
      seen.add(name);
      try {
        decoded.push({
          name,
          version: String(r.version ?? ""),
          value: decodeXdsResource(kind, name, r.resource),
        });
      } catch (e) {
        errors.push(messageOf(e));
      }
    }
    if (errors.length > 0) {
      const message = `${typeUrl}: rejected ${errors.length} of ${resources.length} resources, ` +
        `keeping the previous ones: ${errors.join("; ")}`;
      const held = this.#rejected.get(typeUrl) ?? new Set();
      for (const name of seen) held.add(name);
      this.#rejected.set(typeUrl, held);
      return this.#nack(stream, typeUrl, res.nonce, message);
    }
    this.#apply(kind, typeUrl, String(res.systemVersionInfo ?? ""), decoded, removed);
    const held = this.#rejected.get(typeUrl);
    if (held !== undefined) {
      for (const d of decoded) held.delete(d.name);
      for (const name of removed) held.delete(name);
    }
    if (held === undefined || held.size === 0) {
      this.#rejected.delete(typeUrl);
      delete this.#nacked[typeUrl];
    }
    this.#acked[typeUrl] = String(res.systemVersionInfo ?? "");
    stream.send({ typeUrl, responseNonce: res.nonce });
    this.#hooks.onAck?.(typeUrl, this.#acked[typeUrl]);
  }

  #nack(stream: AdsStream, typeUrl: string, nonce: string, message: string): void {
    const text = message.length > MAX_NACK_CHARS ? message.slice(0, MAX_NACK_CHARS - 1) + "\u2026" : message;
    this.#nacked[typeUrl] = text;
    this.#log.warn(`ADS: NACK ${text}`);
    stream.send({
      typeUrl,
      responseNonce: nonce,
      errorDetail: { code: GRPC_STATUS.INVALID_ARGUMENT, message: text },
    });
    this.#hooks.onNack?.(typeUrl, text);
  }

  #apply<K extends ResourceKind>(
    kind: K,
    typeUrl: string,
    version: string,
    decoded: Decoded<K>[],
    removed: string[],
  ): void {
    const store = this.#held[kind];
    const held = new Map(store);
    let changed = false;
    for (const r of decoded) {
      const old = held.get(r.name);
      if (old?.version !== r.version || JSON.stringify(old.value) !== JSON.stringify(r.value)) changed = true;
      held.set(r.name, { version: r.version, value: deepFreeze(r.value) });
    }
    for (const name of removed) if (held.delete(name)) changed = true;
    const versionChanged = this.#config.versions[typeUrl] !== version;
    if (!changed && !versionChanged) return;
    store.clear();
    for (const [name, h] of held) store.set(name, h);
    const next: AdsConfig = { ...this.#config, versions: { ...this.#config.versions, [typeUrl]: version } };
    INSTALL[kind](next, store, this.#workloadKey);
    this.#config = deepFreeze(next);
    for (const l of this.#listeners) {
      try {
        l(this.#config, typeUrl);
      } catch (e) {
        this.#log.warn(`ADS: update listener failed: ${messageOf(e)}`);
      }
    }
  }
}
