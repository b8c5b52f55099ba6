/**
 * gRPC calls over Deno's own fetch on HTTP/2 (`Deno.createHttpClient({http1: false, http2: true})`),
 * for the agent's two calls to meshd (the Delta ADS stream and CreateCertificate), instead of
 * npm:@grpc/grpc-js: it keeps node:http2 off the proxy (denoland/deno#36788, an abort inside nghttp2
 * on GOAWAY) and grpc-js (16 MiB of RSS on the isolate, measured in README.md) out of memory.
 *
 * Wire: the gRPC over HTTP/2 protocol (grpc/grpc PROTOCOL-HTTP2.md): a POST to `/<service>/<method>`
 * with `content-type: application/grpc` and `te: trailers`; each message framed as one flag byte (0:
 * not compressed; no grpc-accept-encoding is sent, so meshd never compresses) and a 4-byte big-endian
 * length. The request body is a stream written message by message, and the response is read as it
 * arrives, so one call is full duplex (checked against meshd's grpc-js server: a request written after
 * reading a response reaches meshd on the same stream). TLS is not fetch's own (its `caCerts` add to the
 * default roots): see tls_tunnel.ts.
 *
 * Status: a trailers-only answer (an error before any message) carries `grpc-status` and
 * `grpc-message` in its headers, which fetch exposes. Deno's fetch does not expose HTTP trailers, so
 * the status that ends a call after messages is not visible: such an end is reported as
 * {@link ENDED_WITHOUT_STATUS} (for ADS any end means a reconnect; a unary call with its one message is
 * a success). A lost connection or a reset stream is UNAVAILABLE, our own cancel CANCELLED, an
 * exceeded deadline DEADLINE_EXCEEDED, a non-200 HTTP status as the gRPC spec maps it.
 *
 * @module
 */
import { MessageReader } from "../../shared/internal/grpc/messages.ts";
import { startTlsTunnel, type TlsTunnel } from "./tls_tunnel.ts";

/** gRPC status codes used here (grpc/grpc doc/statuscodes.md). */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The status names by code, for messages. */
export const STATUS_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(GRPC_STATUS).map(([name, code]) => [code, name]),
);

/** The details of a call that ended after its messages: its trailers (and so its status) are not readable. */
export const ENDED_WITHOUT_STATUS = "the stream ended (its trailers are not readable through fetch)";

/** How a call ended. */
export interface GrpcStatus {
  code: number;
  details: string;
}

/** Largest message accepted, bytes (grpc-js's max_receive_message_length as the agent set it). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Where meshd is and how to verify it. */
export interface FetchChannelOptions {
  /** `host:port` (an IPv6 host in brackets). */
  address: string;
  /** h2c (HTTP/2 with prior knowledge, no TLS): meshd's --grpcAddr. */
  plaintext?: boolean;
  /** PEM roots meshd's serving certificate must chain to: the only ones trusted (tls_tunnel.ts). */
  rootsPem?: string;
  /** The client certificate to present: PEM chain (leaf first) and PKCS #8 key. */
  clientCertificate?: { certChainPem: string; privateKeyPem: string };
  /** The name meshd's certificate must carry, whatever address is dialled; default the dialled host. */
  serverName?: string;
}

/** Frames one message. */
export function frameMessage(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

/** The gRPC status of a non-200 HTTP answer (PROTOCOL-HTTP2.md, "HTTP to gRPC status code mapping"). */
export function statusOfHttp(status: number): number {
  if (status === 400) return GRPC_STATUS.INTERNAL;
  if (status === 401) return GRPC_STATUS.UNAUTHENTICATED;
  if (status === 403) return GRPC_STATUS.PERMISSION_DENIED;
  if (status === 404) return GRPC_STATUS.UNIMPLEMENTED;
  if ([429, 502, 503, 504].includes(status)) return GRPC_STATUS.UNAVAILABLE;
  return GRPC_STATUS.UNKNOWN;
}

/** Splits a byte stream into gRPC messages (the framing meshd's gRPC server reads with, too). */
export class MessageDeframer {
  readonly #reader = new MessageReader(MAX_MESSAGE_BYTES, "");

  /**
   * Adds received bytes; returns the messages now complete (views of `bytes` where a message lies
   * whole inside it).
   *
   * @throws GrpcError (INTERNAL / RESOURCE_EXHAUSTED) on a compressed or oversized message
   */
  push(bytes: Uint8Array): Uint8Array[] {
    const r = this.#reader.push(bytes);
    if (r.error) throw new GrpcError(r.error.code, r.error.details);
    return r.messages;
  }

  /** Whether an incomplete message is held. */
  get partial(): boolean {
    return this.#reader.partial;
  }
}

/** A call that ended with a status other than OK. */
export class GrpcError extends Error {
  /** @param code gRPC status code; @param details the server's or our own message */
  constructor(readonly code: number, readonly details: string) {
    super(details);
    this.name = "GrpcError";
  }
}

function decodeGrpcMessage(value: string | null): string {
  if (!value) return "";
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** One call: write messages, read messages, end or cancel; {@link status} says how it ended. */
export class GrpcCall {
  readonly #abort = new AbortController();
  readonly #status = Promise.withResolvers<GrpcStatus>();
  #body!: ReadableStreamDefaultController<Uint8Array>;
  #bodyOpen = true;
  #cancelled = false;
  #settled = false;

  /** @internal use {@link FetchChannel.call} */
  constructor(
    channel: FetchChannel,
    path: string,
    headers: Record<string, string>,
    onMessage: (message: Uint8Array) => void,
    deadlineMs?: number,
  ) {
    const body = new ReadableStream<Uint8Array>({
      start: (c) => void (this.#body = c),
      // fetch stopped sending (meshd ended the stream): later writes are dropped, not thrown.
      cancel: () => void (this.#bodyOpen = false),
    });
    const timer = deadlineMs === undefined ? undefined : setTimeout(() => {
      this.#settle(GRPC_STATUS.DEADLINE_EXCEEDED, `no answer within ${deadlineMs} ms`);
      this.#abort.abort();
    }, deadlineMs);
    if (deadlineMs !== undefined) headers["grpc-timeout"] = `${Math.max(1, Math.ceil(deadlineMs))}m`;
    void this.#run(channel, path, headers, body, onMessage).finally(() => clearTimeout(timer));
  }

  /** How the call ended; never rejects. */
  get status(): Promise<GrpcStatus> {
    return this.#status.promise;
  }

  /** Sends one message (ignored once the call has ended or been half-closed). */
  write(message: Uint8Array): void {
    if (this.#bodyOpen && !this.#settled) this.#body.enqueue(frameMessage(message));
  }

  /** Half-closes: no more messages from us; meshd may still answer. */
  end(): void {
    if (!this.#bodyOpen) return;
    this.#bodyOpen = false;
    try {
      this.#body.close();
    } catch {
      // The body was already cancelled by fetch (the stream ended).
    }
  }

  /** Ends the call now (RST_STREAM); the status becomes CANCELLED unless it had ended. */
  cancel(): void {
    this.#cancelled = true;
    this.#settle(GRPC_STATUS.CANCELLED, "cancelled by the client");
    this.#abort.abort();
  }

  #settle(code: number, details: string): void {
    if (this.#settled) return;
    this.#settled = true;
    this.end();
    this.#status.resolve({ code, details });
  }

  async #run(
    channel: FetchChannel,
    path: string,
    headers: Record<string, string>,
    body: ReadableStream<Uint8Array>,
    onMessage: (message: Uint8Array) => void,
  ): Promise<void> {
    let response: Response;
    try {
      response = await fetch(`${channel.origin}${path}`, {
        method: "POST",
        client: channel.client,
        body,
        signal: this.#abort.signal,
        headers: { ...headers, "content-type": "application/grpc", te: "trailers" },
      });
    } catch (e) {
      const tlsError = channel.tlsError();
      const why = tlsError ? `TLS: ${tlsError}` : errorText(e);
      return this.#settle(GRPC_STATUS.UNAVAILABLE, `cannot reach ${channel.address}: ${why}`);
    }
    const trailersOnly = response.headers.get("grpc-status");
    if (response.status !== 200 || trailersOnly !== null) {
      await response.body?.cancel().catch(() => {});
      if (trailersOnly !== null) {
        return this.#settle(Number(trailersOnly), decodeGrpcMessage(response.headers.get("grpc-message")));
      }
      return this.#settle(statusOfHttp(response.status), `HTTP status ${response.status}`);
    }
    const deframer = new MessageDeframer();
    try {
      for await (const chunk of response.body ?? []) {
        for (const message of deframer.push(chunk)) {
          if (this.#settled) break;
          onMessage(message);
        }
        if (this.#settled) break;
      }
    } catch (e) {
      if (e instanceof GrpcError) return this.#settle(e.code, e.details);
      if (!this.#cancelled) this.#settle(GRPC_STATUS.UNAVAILABLE, `the stream broke: ${errorText(e)}`);
      return;
    } finally {
      if (this.#settled) await response.body?.cancel().catch(() => {});
    }
    if (deframer.partial) return this.#settle(GRPC_STATUS.INTERNAL, "the stream ended inside a message");
    this.#settle(GRPC_STATUS.UNKNOWN, ENDED_WITHOUT_STATUS);
  }
}

function errorText(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
  return `${e.message}${cause}`;
}

/**
 * The HTTP/2 client of one meshd address and one client certificate; calls share its connection. Plain
 * text is h2c straight to meshd; TLS goes through a {@link TlsTunnel} (tls_tunnel.ts), which verifies
 * meshd against the configured roots only.
 */
export class FetchChannel {
  readonly address: string;
  readonly client: Deno.HttpClient;
  /** `http://host:port` to put before a method path. */
  readonly origin: string;
  readonly #tunnel: TlsTunnel | undefined;
  #closed = false;

  /**
   * @param options the address and the TLS settings
   * @throws Error when TLS is asked for without PEM roots, or the address has no port
   */
  constructor(options: FetchChannelOptions) {
    this.address = options.address;
    portOf(options.address); // throws now, naming the address, rather than at the first call
    if (options.plaintext) {
      this.origin = `http://${options.address}`;
      this.client = Deno.createHttpClient({ http1: false, http2: true });
      return;
    }
    if (!options.rootsPem?.includes("-----BEGIN CERTIFICATE-----")) {
      throw new Error("the roots to verify meshd must be PEM certificates");
    }
    this.#tunnel = startTlsTunnel({
      address: options.address,
      rootsPem: options.rootsPem,
      clientCertificate: options.clientCertificate,
      serverName: options.serverName,
    });
    this.origin = `http://${this.#tunnel.authority}`;
    this.client = Deno.createHttpClient({ http1: false, http2: true, proxy: this.#tunnel.proxy });
  }

  /** Why the last TLS connection to meshd failed, if it did. */
  tlsError(): string | undefined {
    return this.#tunnel?.lastError();
  }

  /** Opens a call to `/<service>/<method>`; `onMessage` gets each response message. */
  call(
    path: string,
    onMessage: (message: Uint8Array) => void,
    options: { headers?: Record<string, string>; deadlineMs?: number } = {},
  ): GrpcCall {
    if (this.#closed) throw new Error(`the channel to ${this.address} is closed`);
    return new GrpcCall(this, path, { ...(options.headers ?? {}) }, onMessage, options.deadlineMs);
  }

  /**
   * Closes the connection. With TLS the tunnel closes first, so the GOAWAY that closing the HTTP client
   * writes never reaches meshd: meshd sees the connection end, as when the kernel closes it (node:http2
   * in meshd can abort on a GOAWAY, denoland/deno#36788; README.md). Plain text: h2c straight to meshd,
   * so the GOAWAY reaches it. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#tunnel?.close();
    this.client.close();
  }
}

/** The port of `host:port` or `[v6]:port`. */
export function portOf(address: string): number {
  const port = Number(/:(\d+)$/.exec(address)?.[1]);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`no port in ${address}`);
  return port;
}
