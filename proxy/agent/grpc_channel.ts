/**
 * gRPC channels of the agent's two calls to meshd (the Delta ADS stream and CreateCertificate), on the
 * project's own HTTP/2 codec (shared/internal/http2, client role) over node:net or node:tls sockets
 * that meshd_dial.ts connects and verifies. No grpc-js, no node:http2 (denoland/deno#36788: an abort
 * inside nghttp2 on GOAWAY), no Deno fetch (it hides HTTP trailers and its TLS adds the default roots).
 *
 * Wire: gRPC over HTTP/2 (grpc/grpc PROTOCOL-HTTP2.md): a POST to `/<service>/<method>` with
 * `content-type: application/grpc`, `te: trailers`, and `grpc-timeout` when the call has a deadline;
 * messages framed by shared/internal/grpc/messages.ts (never compressed: no grpc-accept-encoding is
 * sent). How a call ends ({@link GrpcStatus}): the `grpc-status`/`grpc-message` of the trailers (or of a
 * trailers-only answer); a non-200 HTTP status as the spec maps it; a response without a status
 * UNKNOWN; RST_STREAM as the spec maps its code (REFUSED_STREAM, a GOAWAY below the stream: UNAVAILABLE;
 * CANCEL: CANCELLED); a lost connection or a failed connect UNAVAILABLE; our own cancel CANCELLED; an
 * exceeded deadline DEADLINE_EXCEEDED.
 *
 * A channel keeps one connection and opens a new one when it is gone or draining (meshd's GOAWAY at
 * its max connection age). {@link GrpcChannel.close} destroys the sockets without a GOAWAY: meshd sees
 * the connection end as when the kernel closes it (meshd with `--grpcTransport children` still serves
 * on node:http2, which can abort on a GOAWAY).
 *
 * @module
 */
import type { Duplex } from "node:stream";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import {
  CANCEL,
  ENHANCE_YOUR_CALM,
  INADEQUATE_SECURITY,
  REFUSED_STREAM,
} from "../../shared/internal/http2/frame.ts";
import { type HeaderList, headerValue } from "../../shared/internal/http2/headers.ts";
import { Http2Error } from "../../shared/internal/http2/limits.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import {
  messagePrefix,
  MessageReader,
  percentDecodeGrpcMessage,
} from "../../shared/internal/grpc/messages.ts";
import { INVALID_GRPC_STATUS, isGrpcForStats, parseGrpcStatus } from "../grpc/grpc_status.ts";
import { GrpcStatus as GrpcStatusCodes, httpToGrpcStatus } from "../grpc/local_reply.ts";
import {
  authorityOf,
  checkTarget,
  CONNECT_TIMEOUT_MS,
  DialError,
  dialMeshd,
  type MeshdTarget,
} from "./meshd_dial.ts";

/** gRPC status codes (grpc/grpc doc/statuscodes.md), the proxy's one table (../grpc/local_reply.ts). */
export const GRPC_STATUS: Readonly<Record<keyof typeof GrpcStatusCodes, number>> = GrpcStatusCodes;

/** The status names by code, for messages. */
export const STATUS_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(GRPC_STATUS).map(([name, code]) => [code, name]),
);

/** How a call ended. */
export interface GrpcStatus {
  code: number;
  details: string;
}

/** Largest message a channel accepts by default, octets: grpc-js's default max_receive_message_length. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** What a unary call gives: its status, and when OK the one answer. */
export interface UnaryResult {
  status: GrpcStatus;
  /** The answer; set only when the status is OK. */
  message?: Uint8Array;
}

/**
 * The gRPC status of a stream that failed with `e` (PROTOCOL-HTTP2.md, "Errors"): the connection gone
 * (stream 0) or refused (REFUSED_STREAM, a GOAWAY) UNAVAILABLE, CANCEL CANCELLED, ENHANCE_YOUR_CALM
 * RESOURCE_EXHAUSTED, INADEQUATE_SECURITY PERMISSION_DENIED, any other code INTERNAL.
 */
export function statusOfStreamError(e: Http2Error): number {
  if (e.stream === 0 || e.code === REFUSED_STREAM) return GRPC_STATUS.UNAVAILABLE;
  if (e.code === CANCEL) return GRPC_STATUS.CANCELLED;
  if (e.code === ENHANCE_YOUR_CALM) return GRPC_STATUS.RESOURCE_EXHAUSTED;
  if (e.code === INADEQUATE_SECURITY) return GRPC_STATUS.PERMISSION_DENIED;
  return GRPC_STATUS.INTERNAL;
}

/** The status a `grpc-status`/`grpc-message` pair carries (a value that is not a code: UNKNOWN). */
function statusOf(headers: HeaderList, code: string): GrpcStatus {
  const message = percentDecodeGrpcMessage(headerValue(headers, "grpc-message") ?? "");
  const parsed = parseGrpcStatus(code);
  if (parsed === undefined || parsed === INVALID_GRPC_STATUS) {
    return { code: GRPC_STATUS.UNKNOWN, details: `grpc-status ${code}: ${message}` };
  }
  return { code: parsed, details: message };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One call: write messages, read messages, end or cancel; {@link status} says how it ended. */
export class GrpcCall {
  readonly #status = Promise.withResolvers<GrpcStatus>();
  readonly #maxMessageBytes: number;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  /** performance.now() of the deadline, or Infinity. */
  readonly #deadlineAt: number = Infinity;
  readonly #deadlineMs: number = Infinity;
  #stream: Http2Stream | undefined;
  #connection: Http2Connection | undefined;
  /** Messages written before the stream opened. */
  #pending: Uint8Array[] = [];
  #halfClosed = false;
  #settled = false;

  /** @internal use {@link GrpcChannel.call} */
  constructor(
    channel: GrpcChannel,
    headers: HeaderList,
    onMessage: (message: Uint8Array) => void,
    deadlineMs: number | undefined,
    maxMessageBytes: number,
  ) {
    this.#maxMessageBytes = maxMessageBytes;
    if (deadlineMs !== undefined) {
      this.#deadlineAt = performance.now() + deadlineMs;
      this.#deadlineMs = deadlineMs;
      this.#timer = setTimeout(() => this.#expire(deadlineMs), deadlineMs);
    }
    void this.#run(channel, headers, onMessage);
  }

  /** How the call ended; never rejects. */
  get status(): Promise<GrpcStatus> {
    return this.#status.promise;
  }

  /** The connection the call runs on, once its stream is open (for keepalive PINGs). */
  get connection(): Http2Connection | undefined {
    return this.#connection;
  }

  /** Sends one message (ignored once the call has ended or been half-closed). */
  write(message: Uint8Array): void {
    if (this.#settled || this.#halfClosed) return;
    const prefix = messagePrefix(message.length);
    if (this.#stream) {
      void this.#stream.write(prefix);
      void this.#stream.write(message);
    } else {
      this.#pending.push(prefix, message);
    }
  }

  /** Half-closes: no more messages from us; meshd may still answer. */
  end(): void {
    if (this.#halfClosed) return;
    this.#halfClosed = true;
    this.#stream?.end();
  }

  /**
   * Ends the call now (RST_STREAM CANCEL); the status becomes `code` (default CANCELLED) unless it had
   * ended: a client that refuses what it got (a second answer to a unary call) ends it with its reason.
   */
  cancel(code: number = GRPC_STATUS.CANCELLED, details = "cancelled by the client"): void {
    this.#settle(code, details, true);
  }

  #expire(deadlineMs: number): void {
    this.#settle(GRPC_STATUS.DEADLINE_EXCEEDED, `no answer within ${deadlineMs} ms`, true);
  }

  /**
   * Settles once. `local`: we end the call (cancel, deadline, a message we refuse): RST_STREAM CANCEL.
   * Otherwise the peer ended it: our side is half-closed, so the stream closes without a reset.
   */
  #settle(code: number, details: string, local = false): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#pending = [];
    if (local) this.#stream?.reset(CANCEL);
    else this.end();
    this.#status.resolve({ code, details });
  }

  async #run(
    channel: GrpcChannel,
    headers: HeaderList,
    onMessage: (message: Uint8Array) => void,
  ): Promise<void> {
    let stream: Http2Stream;
    try {
      let connection = await channel.connection(this.#deadlineAt - performance.now());
      // Another call may have taken its last stream meanwhile: then connection() dials anew.
      if (!connection.canOpenStream) {
        connection = await channel.connection(this.#deadlineAt - performance.now());
      }
      if (this.#settled) return;
      stream = connection.request(headers);
      this.#connection = connection;
      const on = connection;
      void stream.closed.then(() => channel.released(on));
    } catch (e) {
      // The dial was bounded by our deadline and may fire a hair before our timer: the deadline it is.
      if (performance.now() >= this.#deadlineAt - 1) return this.#expire(this.#deadlineMs);
      const why = e instanceof DialError && e.tls ? `TLS: ${e.message}` : errorText(e);
      return this.#settle(GRPC_STATUS.UNAVAILABLE, `cannot reach ${channel.address}: ${why}`);
    }
    this.#stream = stream;
    for (const framed of this.#pending) void stream.write(framed);
    this.#pending = [];
    if (this.#halfClosed) stream.end();
    try {
      const head = await stream.response;
      if (this.#settled) return;
      const trailersOnly = headerValue(head, "grpc-status");
      if (trailersOnly !== undefined) {
        // Trailers-Only is one HEADERS with END_STREAM (PROTOCOL-HTTP2.md); a head with a status that
        // keeps the stream open is neither an answer nor an end: refused, so the stream is not left open.
        if (!stream.remoteEnded) {
          return this.#settle(
            GRPC_STATUS.INTERNAL,
            `the response head carries grpc-status ${trailersOnly} but does not end the stream`,
            true,
          );
        }
        const s = statusOf(head, trailersOnly);
        return this.#settle(s.code, s.details);
      }
      const http = Number(headerValue(head, ":status"));
      if (http !== 200) return this.#settle(httpToGrpcStatus(http), `HTTP status ${http}`, true);
      const type = headerValue(head, "content-type") ?? "";
      if (!isGrpcForStats(type)) { // application/grpc or application/grpc+<format>; not grpc-web
        return this.#settle(GRPC_STATUS.UNKNOWN, `content-type ${JSON.stringify(type)} is not gRPC`, true);
      }
      const reader = new MessageReader(this.#maxMessageBytes, headerValue(head, "grpc-encoding") ?? "");
      for await (const chunk of stream) {
        const r = reader.push(chunk);
        for (const message of r.messages) {
          if (this.#settled) return;
          onMessage(message);
        }
        if (r.error) return this.#settle(r.error.code, r.error.details, true);
        if (this.#settled) return;
      }
      if (reader.partial) return this.#settle(GRPC_STATUS.INTERNAL, "the stream ended inside a message");
      const trailers = await stream.trailers;
      const code = trailers && headerValue(trailers, "grpc-status");
      if (code === undefined) {
        return this.#settle(GRPC_STATUS.UNKNOWN, "the stream ended without a grpc-status");
      }
      const s = statusOf(trailers!, code);
      this.#settle(s.code, s.details);
    } catch (e) {
      if (!(e instanceof Http2Error)) return this.#settle(GRPC_STATUS.INTERNAL, errorText(e), true);
      const where = e.stream === 0 ? `the connection to ${channel.address} ended: ` : "";
      this.#settle(statusOfStreamError(e), `${where}${e.message}`);
    }
  }
}

/** Options of {@link GrpcChannel}: meshd's address and how to reach and verify it (meshd_dial.ts). */
export interface GrpcChannelOptions extends MeshdTarget {
  /**
   * Largest message accepted, octets; default {@link DEFAULT_MAX_MESSAGE_BYTES}. A larger one ends
   * the call RESOURCE_EXHAUSTED (RST_STREAM CANCEL) before it is buffered.
   */
  maxMessageBytes?: number;
}

/**
 * The calls to one meshd address with one client certificate; calls share its HTTP/2 connection,
 * which is dialled at the first call and again after it ended or drains.
 */
export class GrpcChannel {
  readonly address: string;
  readonly #target: MeshdTarget;
  readonly #maxMessageBytes: number;
  readonly #scheme: string;
  readonly #authority: string;
  readonly #sockets = new Map<Http2Connection, Duplex>();
  #current: Promise<Http2Connection> | undefined;
  /** The connection dialled last: the one new calls use while it can open streams. */
  #latest: Http2Connection | undefined;
  /** Aborted by {@link close}: a dial in progress gives up (its socket and timer go). */
  readonly #dials = new AbortController();
  #closed = false;

  /**
   * @param options the address and the TLS settings
   * @throws Error when TLS is asked for without PEM roots, or the address has no port
   */
  constructor(options: GrpcChannelOptions) {
    checkTarget(options); // throws now, naming the address, rather than at the first call
    this.address = options.address;
    this.#target = options;
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#scheme = options.plaintext ? "http" : "https";
    this.#authority = authorityOf(options);
  }

  /** Opens a call to `/<service>/<method>`; `onMessage` gets each response message. */
  call(
    path: string,
    onMessage: (message: Uint8Array) => void,
    options: { headers?: Record<string, string>; deadlineMs?: number } = {},
  ): GrpcCall {
    if (this.#closed) throw new Error(`the channel to ${this.address} is closed`);
    const headers: HeaderList = [
      [":method", "POST"],
      [":scheme", this.#scheme],
      [":path", path],
      [":authority", this.#authority],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
    ];
    if (options.deadlineMs !== undefined) {
      headers.push(["grpc-timeout", `${Math.max(1, Math.ceil(options.deadlineMs))}m`]);
    }
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      headers.push([name.toLowerCase(), value]);
    }
    return new GrpcCall(this, headers, onMessage, options.deadlineMs, this.#maxMessageBytes);
  }

  /**
   * A unary call, as grpc-js's makeUnaryRequest: sends `request`, half-closes, and takes one answer. A
   * second answer cancels the call (UNIMPLEMENTED "Too many responses received", so no answer stream
   * grows without bound), and an OK without an answer is UNIMPLEMENTED "No message received".
   */
  async unary(
    path: string,
    request: Uint8Array,
    options: { headers?: Record<string, string>; deadlineMs?: number } = {},
  ): Promise<UnaryResult> {
    let answer: Uint8Array | undefined;
    const call: GrpcCall = this.call(path, (m) => {
      if (answer !== undefined) call.cancel(GRPC_STATUS.UNIMPLEMENTED, "Too many responses received");
      else answer = m;
    }, options);
    call.write(request);
    call.end();
    const status = await call.status;
    if (status.code !== GRPC_STATUS.OK) return { status };
    if (answer === undefined) {
      return { status: { code: GRPC_STATUS.UNIMPLEMENTED, details: "No message received" } };
    }
    return { status, message: answer };
  }

  /**
   * @internal The open connection, or a new one when there is none or it cannot open a stream (it
   * drains after a GOAWAY, or is at the peer's SETTINGS_MAX_CONCURRENT_STREAMS: the calls on the old
   * one go on there).
   * @param withinMs the time left to the asking call's deadline, ms: a dial it starts gives up then
   * @throws DialError when meshd cannot be reached or verified; Error when the channel is closed
   */
  async connection(withinMs = Infinity): Promise<Http2Connection> {
    if (this.#closed) throw new Error("the channel is closed");
    const pending = this.#current;
    const current = await pending?.catch(() => undefined);
    if (current?.canOpenStream) return current;
    // Another call may have dialled meanwhile: only the first to see this one gone dials again.
    if (this.#current === pending) this.#current = this.#connect(withinMs);
    return await this.#current!;
  }

  async #connect(withinMs: number): Promise<Http2Connection> {
    const connectTimeoutMs = Math.max(
      1,
      Math.min(this.#target.connectTimeoutMs ?? CONNECT_TIMEOUT_MS, withinMs),
    );
    const socket = await dialMeshd({ ...this.#target, connectTimeoutMs }, this.#dials.signal);
    if (this.#closed) {
      socket.destroy();
      throw new Error("the channel is closed");
    }
    const connection = new Http2Connection(socket, { role: "client" });
    this.#latest = connection;
    this.#sockets.set(connection, socket);
    socket.once("close", () => this.#sockets.delete(connection));
    return connection;
  }

  /**
   * @internal A stream on `connection` closed. A connection replaced by a newer one (it was full) is
   * closed, without a GOAWAY as in {@link close}, once its last stream is done: none piles up.
   */
  released(connection: Http2Connection): void {
    if (connection !== this.#latest && connection.activeStreams === 0) this.drop(connection);
  }

  /**
   * Destroys one connection's socket (no GOAWAY): a connection that stopped answering (keepalive) must
   * not carry the next call, and without a FIN it would not end by itself. Its calls end UNAVAILABLE.
   */
  drop(connection: Http2Connection): void {
    this.#sockets.get(connection)?.destroy();
  }

  /**
   * Closes the connections by destroying their sockets: no GOAWAY (see the module doc); open calls
   * end UNAVAILABLE, a dial in progress is abandoned. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#dials.abort();
    for (const socket of this.#sockets.values()) socket.destroy();
    this.#sockets.clear();
  }
}
