/**
 * `Http2Connection`: one HTTP/2 connection (RFC 9113) over a connected duplex socket (node:net
 * Socket or node:tls TLSSocket), in the server or the client role, with Envoy's limits
 * (`limits.ts`). A peer can end its streams or the connection, but nothing it sends throws out of
 * here or grows memory without bound: violations become RST_STREAM or GOAWAY and a close.
 *
 * @module
 */
import type { Duplex } from "node:stream";
import {
  errorName,
  FRAME_SIZE_ERROR,
  INTERNAL_ERROR,
  NO_ERROR,
  pingFrame,
  PREFACE,
  PROTOCOL_ERROR,
} from "./frame.ts";
import { FrameReader, FrameSizeError } from "./frame_reader.ts";
import type { HeaderList } from "./headers.ts";
import { DEFAULT_HTTP2_LIMITS, Http2Error, type Http2Limits } from "./limits.ts";
import { BlockState, receiveFrame } from "./receive.ts";
import { type CloseInfo, type GoawayInfo, Http2Session } from "./session.ts";
import { openingFrames } from "./settings.ts";
import { handled, type Http2Stream } from "./stream.ts";

export type { CloseInfo, GoawayInfo } from "./session.ts";

/** Options of {@link Http2Connection}. */
export interface Http2ConnectionOptions {
  /** "server": expects the client preface, calls `onStream` per request. "client": sends the preface, `request()`. */
  role: "server" | "client";
  /** Overrides of {@link DEFAULT_HTTP2_LIMITS}. */
  limits?: Partial<Http2Limits>;
  /** Server: a new request stream (request headers in `stream.headers`, validated). Must not block. */
  onStream?: (stream: Http2Stream) => void;
  /** The peer sent GOAWAY (each one; the last-stream-id only decreases). */
  onGoaway?: (info: GoawayInfo) => void;
  /** Protocol errors and floods, one line each. Default: nothing. */
  log?: (message: string) => void;
  /** Server: octets already read from the socket (a protocol sniffer's), processed before the socket's. */
  initialBytes?: Uint8Array;
}

/** Options of {@link Http2Connection.request}. */
export interface RequestOptions {
  /** The request has no body: END_STREAM on its HEADERS. */
  endStream?: boolean;
}

const PREFACE_LEN = PREFACE.length;

/** An HTTP/2 connection in either role. */
export class Http2Connection {
  readonly #s: Http2Session;
  readonly #reader: FrameReader;
  readonly #block = new BlockState();
  /** Server: octets of the client preface still expected. */
  #prefaceLeft: number;
  /** PINGs sent and not yet acknowledged, oldest first. */
  #pings: { resolve: () => void; reject: (e: Error) => void }[] = [];

  /** Takes over `socket` (already connected, paused or not; its data events are consumed from now on). */
  constructor(socket: Duplex, options: Http2ConnectionOptions) {
    const limits = { ...DEFAULT_HTTP2_LIMITS, ...options.limits };
    const server = options.role === "server";
    this.#s = new Http2Session(socket, server, limits, options.log ?? (() => {}));
    if (options.onStream) this.#s.onStream = options.onStream;
    if (options.onGoaway) this.#s.onGoaway = options.onGoaway;
    this.#reader = new FrameReader(limits.maxFrameSize);
    this.#prefaceLeft = server ? PREFACE_LEN : 0;
    if (!server) this.#s.writer.frame(PREFACE);
    for (const f of openingFrames(limits, server)) this.#s.writer.frame(f);
    // Small frames (ACKs, a response head) must not wait for Nagle's algorithm; Envoy sets TCP_NODELAY too.
    (socket as Partial<{ setNoDelay(v: boolean): void }>).setNoDelay?.(true);
    socket.on("data", this.#onData);
    socket.on("error", this.#onSocketError);
    socket.on("close", this.#onSocketClose);
    socket.on("end", this.#onSocketEnd);
    this.#s.closed.then(() => {
      for (const p of this.#pings.splice(0)) p.reject(new Http2Error(NO_ERROR, "connection closed"));
    });
    if (options.initialBytes && options.initialBytes.length > 0) this.#onData(options.initialBytes);
    // A sniffer may have paused the socket (and unshifted what it read): a 'data' listener alone does
    // not restart an explicitly paused stream.
    socket.resume();
  }

  /** Resolves when the connection has ended (never rejects). */
  get closed(): Promise<CloseInfo> {
    return this.#s.closed;
  }

  /** Streams open now. */
  get activeStreams(): number {
    return this.#s.activeStreams;
  }

  /** Client: whether {@link request} may open a stream now (no GOAWAY, below the peer's concurrency limit). */
  get canOpenStream(): boolean {
    const s = this.#s;
    return !s.server && !s.isClosed && s.goawayReceivedId < 0 && s.goawaySentId < 0 &&
      s.streams.size < s.peerMaxConcurrent && s.nextStreamId <= 0x7fffffff;
  }

  /** Whether the peer's first SETTINGS frame has arrived (its limits, such as max concurrent streams, are known). */
  get peerSettingsReceived(): boolean {
    return this.#s.settingsReceived;
  }

  /** Whether the connection has ended, or is draining after a GOAWAY either way. */
  get draining(): boolean {
    return this.#s.isClosed || this.#s.goawayReceivedId >= 0 || this.#s.goawaySentId >= 0;
  }

  /**
   * Client: opens a stream with the request `headers` (lowercase names, the four pseudo-headers
   * first; not validated here). Throws Http2Error(REFUSED_STREAM) when {@link canOpenStream} is
   * false: the caller opens another connection; nothing is queued.
   */
  request(headers: HeaderList, options: RequestOptions = {}): Http2Stream {
    const s = this.#s;
    if (s.server) throw new Http2Error(PROTOCOL_ERROR, "request() on a server connection");
    if (!this.canOpenStream) {
      throw new Http2Error(
        7,
        s.isClosed
          ? "connection closed"
          : "no stream available on this connection (GOAWAY or max concurrent streams)",
      );
    }
    const id = s.nextStreamId;
    s.nextStreamId += 2;
    const stream = s.newStream(id, headers);
    stream.headersSent = true;
    s.sendHeaders(stream, headers, options.endStream === true);
    return stream;
  }

  /**
   * Ends the connection. NO_ERROR (default): graceful, a GOAWAY naming the last stream the peer
   * opened; open streams finish, new ones are refused, then the socket closes. Another code: at
   * once, GOAWAY with that code, every stream fails.
   */
  close(code: number = NO_ERROR, debug = ""): void {
    this.#s.goaway(code, debug);
    this.#s.writer.flush();
  }

  /** Round trip time of a PING, ms (rejects with Http2Error when the connection closes first). */
  ping(): Promise<number> {
    const started = performance.now();
    return handled(
      new Promise<number>((resolve, reject) => {
        if (this.#s.isClosed) return reject(new Http2Error(NO_ERROR, "connection closed"));
        this.#pings.push({ resolve: () => resolve(performance.now() - started), reject });
        this.#s.writer.frame(pingFrame(new Uint8Array(8), false));
      }),
    );
  }

  readonly #onData = (chunk: Uint8Array): void => {
    const s = this.#s;
    if (s.isClosed) return;
    try {
      let data = chunk;
      if (this.#prefaceLeft > 0) {
        const n = Math.min(this.#prefaceLeft, data.length);
        const at = PREFACE_LEN - this.#prefaceLeft;
        for (let i = 0; i < n; i++) {
          if (data[i] !== PREFACE[at + i]) {
            throw new Http2Error(PROTOCOL_ERROR, "not the HTTP/2 client preface");
          }
        }
        this.#prefaceLeft -= n;
        data = data.subarray(n);
      }
      const r = this.#reader;
      r.push(data);
      while (!s.isClosed && r.next()) this.#frame(r.type, r.flags);
    } catch (e) {
      this.#fail(e);
    }
  };

  #frame(type: number, flags: number): void {
    const s = this.#s;
    try {
      receiveFrame(s, this.#reader, this.#block);
      if (type === 6 && (flags & 1) !== 0) this.#pings.shift()?.resolve();
    } catch (e) {
      if (!(e instanceof Http2Error) || e.stream === 0) throw e;
      s.streamError(e.stream, e.code, e.message);
    }
  }

  #fail(e: unknown): void {
    const s = this.#s;
    if (e instanceof FrameSizeError) return s.terminate(FRAME_SIZE_ERROR, e.message, false, true);
    if (e instanceof Http2Error) return s.terminate(e.code, e.message, false, true);
    s.log(`http2: internal error: ${e instanceof Error ? e.stack : e}`);
    s.terminate(INTERNAL_ERROR, "internal error", false, true);
  }

  readonly #onSocketError = (e: Error): void => {
    this.#s.terminate(NO_ERROR, `socket error: ${e.message}`, true, false);
  };

  readonly #onSocketEnd = (): void => {
    this.#s.terminate(NO_ERROR, "the peer closed the connection", true, false);
  };

  readonly #onSocketClose = (): void => {
    this.#s.terminate(NO_ERROR, "socket closed", true, false);
  };

  /** The error code's RFC name (for logs and replies). */
  static errorName(code: number): string {
    return errorName(code);
  }
}
