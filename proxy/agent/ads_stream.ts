/**
 * One Delta ADS stream of the agent's {@link AdsClient} (ads_client.ts) and the channel it runs on:
 * gRPC on the project's HTTP/2 codec (grpc_channel.ts), messages encoded and decoded with ads_wire.ts.
 * What a stream knows of its own life (answered, cancelled, ended) lives here; what the client does
 * with responses and ends stays in ads_client.ts.
 *
 * @module
 */
import { meshdRoots } from "../../shared/internal/tls/meshd_roots.ts";
import { decodeWire, DELTA_ADS_PATH, encodeWire, WIRE_TYPES } from "./ads_wire.ts";
import { GRPC_STATUS, type GrpcCall, GrpcChannel, type GrpcStatus } from "./grpc_channel.ts";

/** PING every `intervalMs`; a PING without an answer within `timeoutMs` ends the stream. */
export interface Liveness {
  intervalMs: number;
  timeoutMs: number;
}

// deno-lint-ignore no-explicit-any
export type Message = Record<string, any>;

/** The workload certificate presented on the mutual-TLS port. */
export interface ClientCertificate {
  certChainPem: string;
  privateKeyPem: string;
  /** The trust bundle meshd sent with it: trusted for meshd's certificate too (after a root rotation). */
  rootsPem?: string;
}

/**
 * Largest ADS message accepted, octets: what grpc-js's max_receive_message_length was set to for ADS
 * (a Delta ADS push to a proxy of a large mesh can pass grpc-js's 4 MiB default).
 */
export const ADS_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** How to reach meshd: plain text, or mutual TLS with roots, a server name and the certificate. */
export interface AdsSecurity {
  plaintext?: boolean;
  rootsPem?: string;
  serverName?: string;
}

/**
 * The channel for `address`: h2c for plain text, else mutual TLS with `certificate`, verifying meshd
 * against the configured roots and the bundle received with the certificate.
 */
export function adsChannel(
  address: string,
  security: AdsSecurity,
  certificate: ClientCertificate | undefined,
): GrpcChannel {
  if (security.plaintext) {
    return new GrpcChannel({ address, plaintext: true, maxMessageBytes: ADS_MAX_MESSAGE_BYTES });
  }
  return new GrpcChannel({
    address,
    maxMessageBytes: ADS_MAX_MESSAGE_BYTES,
    rootsPem: meshdRoots(security.rootsPem!, certificate?.rootsPem),
    serverName: security.serverName,
    clientCertificate: certificate,
  });
}

/** One DeltaAggregatedResources call. */
export class AdsStream {
  gotResponse = false;
  cancelled = false;
  ended = false;
  readonly #ended = Promise.withResolvers<void>();
  readonly #call: GrpcCall;
  #failure: string | undefined;
  #failureCode: number = GRPC_STATUS.UNKNOWN;
  #liveness: ReturnType<typeof setInterval> | undefined;
  #probing = false;

  /**
   * Opens the call; `onResponse` gets each decoded response, `onEnd` the status once.
   */
  constructor(
    readonly id: number,
    readonly channel: GrpcChannel,
    /** The meshd address its channel dials. */
    readonly address: string,
    onResponse: (stream: AdsStream, response: Message) => void,
    onEnd: (stream: AdsStream, status: GrpcStatus) => void,
    liveness?: Liveness,
  ) {
    this.#call = channel.call(DELTA_ADS_PATH, (bytes) => {
      let response: Message;
      try {
        response = decodeWire(WIRE_TYPES.deltaResponse, bytes);
      } catch (e) {
        // As grpc-js ended a call whose message did not deserialize.
        return this.#fail(GRPC_STATUS.INTERNAL, `a response did not decode: ${(e as Error).message}`);
      }
      onResponse(this, response);
    });
    void this.#call.status.then((status) => {
      this.settle();
      onEnd(this, this.#failure ? { code: this.#failureCode, details: this.#failure } : status);
    });
    if (liveness) {
      this.#liveness = setInterval(() => void this.#probe(liveness.timeoutMs), liveness.intervalMs);
    }
  }

  /** Ends the call with our own status (the call itself would say CANCELLED). */
  #fail(code: number, details: string): void {
    this.#failure = details;
    this.#failureCode = code;
    this.#call.cancel();
  }

  /**
   * Keepalive, as grpc-js's `keepalive_time_ms`/`keepalive_timeout_ms`: an HTTP/2 PING on the stream's
   * connection. No answer within `timeoutMs` (a meshd gone without a FIN, a partition) ends the stream
   * as UNAVAILABLE and drops the connection, and the client reconnects (to the next address, if any) on
   * a new one.
   */
  async #probe(timeoutMs: number): Promise<void> {
    const connection = this.#call.connection;
    if (this.#probing || this.ended || !connection) return;
    this.#probing = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      connection.ping().then(() => true, () => true), // a closed connection ends the stream by itself
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    this.#probing = false;
    if (answered || this.ended || this.cancelled) return;
    this.#fail(
      GRPC_STATUS.UNAVAILABLE,
      `keepalive: DEADLINE_EXCEEDED: no PING answer within ${timeoutMs} ms`,
    );
    this.channel.drop(connection); // the next stream, even to this address, dials a new connection
  }

  /** Sends a DeltaDiscoveryRequest (given in proto-loader's shape). */
  send(request: Message): void {
    this.#call.write(encodeWire(WIRE_TYPES.deltaRequest, request));
  }

  /** meshd's status arrived: the stream is over on both sides. */
  settle(): void {
    clearInterval(this.#liveness);
    this.ended = true;
    this.#ended.resolve();
  }

  /**
   * Ends the stream before closing its channel: half-close, wait for meshd's end (at most
   * `graceMs`), then cancel; then closes the channel unless `keepChannel` (new streams use it, or the
   * process exits next and the kernel closes the connection). See AdsClient.stop for why.
   */
  async cancel(graceMs: number, keepChannel = false): Promise<void> {
    if (this.cancelled) return;
    this.cancelled = true;
    if (!this.ended) {
      this.#call.end();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.#ended.promise, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      if (!this.ended) this.#call.cancel();
      await this.#ended.promise;
    }
    if (!keepChannel) this.channel.close();
  }
}
