/**
 * One HTTP/2 stream (RFC 9113 section 5.1) as the proxy uses it: the request and response heads,
 * the body in both directions with flow control (a write resolves when its DATA has been framed
 * within the peer's windows: backpressure; a read returns the window to the peer: our backpressure),
 * trailers, END_STREAM and RST_STREAM.
 *
 * @module
 */
import { CANCEL, errorName, NO_ERROR } from "./frame.ts";
import type { HeaderList } from "./headers.ts";
import { Http2Error } from "./limits.ts";

/** How a stream ended: `code` 0 when both sides ended it normally, else the RST_STREAM (or GOAWAY) code. */
export interface StreamClose {
  /** RFC 9113 error code (0 = NO_ERROR). */
  code: number;
  /** Whether the peer reset it (RST_STREAM received, or the connection went away under it). */
  remote: boolean;
}

/** The close of every stream that both sides ended normally (shared: one object for all). */
const CLOSED_NORMALLY: StreamClose = Object.freeze({ code: NO_ERROR, remote: false });

/** What a stream needs from its connection (implemented by Http2Connection). */
export interface StreamHost {
  /** Encodes and queues HEADERS (+ CONTINUATION). */
  sendHeaders(stream: Http2Stream, headers: HeaderList, endStream: boolean): void;
  /** Queues RST_STREAM and forgets the stream. */
  sendReset(stream: Http2Stream, code: number): void;
  /** The stream has DATA or an end to send. */
  schedule(stream: Http2Stream): void;
  /** The application consumed `n` octets of the stream's DATA: return them to the peer's window. */
  consumed(stream: Http2Stream, n: number): void;
}

interface PendingWrite {
  chunk: Uint8Array;
  resolve: () => void;
  reject: (e: Error) => void;
}

function ignore(): void {}

/** `p`, its rejection marked handled: a write or read nobody awaits must not end the process. */
export function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(ignore);
  return p;
}

/** Settles later; its rejection is marked handled so that an ignored promise never crashes the process. */
class Deferred<T> {
  readonly promise: Promise<T>;
  resolve!: (v: T) => void;
  reject!: (e: Error) => void;
  constructor() {
    this.promise = new Promise<T>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.promise.catch(ignore);
  }
}

/**
 * A result that makes its promise only when someone asks for it (most streams never ask for all
 * three): settling first just records the outcome. The first outcome wins.
 */
class Outcome<T> {
  #deferred: Deferred<T> | null = null;
  #settled = false;
  #value: T | undefined;
  #error: Error | null = null;

  get promise(): Promise<T> {
    if (this.#deferred === null) {
      this.#deferred = new Deferred<T>();
      if (this.#settled) {
        if (this.#error !== null) this.#deferred.reject(this.#error);
        else this.#deferred.resolve(this.#value as T);
      }
    }
    return this.#deferred.promise;
  }

  resolve(value: T): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#value = value;
    this.#deferred?.resolve(value);
  }

  reject(error: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#error = error;
    this.#deferred?.reject(error);
  }
}

/** A stream. Created by the connection: `onStream` (server) or `connection.request()` (client). */
export class Http2Stream {
  /** Stream id. */
  readonly id: number;
  /** Server: the request headers received. Client: the request headers sent. */
  readonly headers: HeaderList;
  readonly #host: StreamHost;
  readonly #response = new Outcome<HeaderList>();
  readonly #trailers = new Outcome<HeaderList | undefined>();
  readonly #closed = new Outcome<StreamClose>();
  /** @internal performance.now() when opened (rapid-reset accounting). */
  readonly openedAt: number = performance.now();

  // Receive side (internal to the codec).
  /** @internal Window the peer may still fill. */
  recvWindow: number;
  /** @internal Octets read by the application and not yet returned by WINDOW_UPDATE. */
  recvUnacked = 0;
  /** @internal Declared content-length of what is received, or -1. */
  recvContentLength = -1;
  /** @internal DATA octets received (padding excluded). */
  recvBytes = 0;
  /** @internal The peer sent END_STREAM. */
  remoteEnded = false;
  #chunks: Uint8Array[] = [];
  #waiter: Deferred<Uint8Array | null> | null = null;
  #error: Http2Error | null = null;

  // Send side (internal to the codec).
  /** @internal The peer's window for this stream (may go negative after a SETTINGS change). */
  sendWindow: number;
  /** @internal Queued writes, oldest first; `sendOffset` into the first. */
  sendQueue: PendingWrite[] = [];
  sendOffset = 0;
  /** @internal end() was called: END_STREAM (or trailers) goes after the queued data. */
  endPending = false;
  endTrailers: HeaderList | null = null;
  /** @internal We sent END_STREAM. */
  localEnded = false;
  /**
   * @internal Server: response heads (1xx, final, trailers-only) waiting for the socket, in order,
   * with their END_STREAM flag; null when none. They go out before the stream's DATA.
   */
  heldHeads: [HeaderList, boolean][] | null = null;
  /** @internal Headers sent or held (client: at open; server: respond()). */
  headersSent = false;
  /** @internal Final response received (client) or request headers complete (server). */
  headReceived = false;
  /** @internal Closed (both ends, or reset). */
  isClosed = false;

  /** @internal */
  constructor(id: number, headers: HeaderList, host: StreamHost, recvWindow: number, sendWindow: number) {
    this.id = id;
    this.headers = headers;
    this.#host = host;
    this.recvWindow = recvWindow;
    this.sendWindow = sendWindow;
  }

  /** Client: the final response headers (1xx skipped). Rejects with {@link Http2Error} when reset first. */
  get response(): Promise<HeaderList> {
    return this.#response.promise;
  }

  /** Trailers received, or undefined when the body ended without them. Rejects with Http2Error on a reset. */
  get trailers(): Promise<HeaderList | undefined> {
    return this.#trailers.promise;
  }

  /** Resolves once the stream is closed, with the code; never rejects. */
  get closed(): Promise<StreamClose> {
    return this.#closed.promise;
  }

  /** Server: a 1xx head (100 Continue, 103 Early Hints) before {@link respond}; a no-op once closed or responded. */
  informational(headers: HeaderList): void {
    if (this.isClosed || this.headersSent) return;
    this.#host.sendHeaders(this, headers, false);
  }

  /**
   * Server: sends the response headers (the caller builds them: lowercase names, `:status` first).
   * A no-op on a stream already closed or reset (see {@link closed}); throws Http2Error when called twice.
   */
  respond(headers: HeaderList, opts: { endStream?: boolean } = {}): void {
    if (this.isClosed) return;
    if (this.headersSent) {
      throw new Http2Error(NO_ERROR, `stream ${this.id}: respond() called twice`, this.id);
    }
    this.headersSent = true;
    this.#host.sendHeaders(this, headers, opts.endStream === true);
  }

  /**
   * Queues body octets; resolves when they have been framed into DATA within the stream's and the
   * connection's send windows and handed to the socket (await it: that is the backpressure).
   * Rejects with Http2Error when the stream is reset or closed first. The chunk must not be changed until then.
   */
  write(chunk: Uint8Array): Promise<void> {
    if (this.isClosed || this.endPending || this.localEnded) {
      return handled(Promise.reject(
        this.#error ?? new Http2Error(CANCEL, `stream ${this.id} is closed for writing`, this.id),
      ));
    }
    if (chunk.length === 0) return Promise.resolve();
    return handled(
      new Promise<void>((resolve, reject) => {
        this.sendQueue.push({ chunk, resolve, reject });
        this.#host.schedule(this);
      }),
    );
  }

  /**
   * Queues `first` and then `rest` (empty ones skipped) as one write: one promise, settled as
   * {@link write}'s for the last of them (a gRPC message's prefix and its shared parts).
   */
  writeAll(first: Uint8Array, rest: readonly Uint8Array[]): Promise<void> {
    if (this.isClosed || this.endPending || this.localEnded || rest.length === 0) return this.write(first);
    return handled(
      new Promise<void>((resolve, reject) => {
        const queue = this.sendQueue;
        let last = first;
        for (const chunk of rest) {
          if (chunk.length === 0) continue;
          if (last.length > 0) queue.push({ chunk: last, resolve: ignore, reject: ignore });
          last = chunk;
        }
        if (last.length > 0) queue.push({ chunk: last, resolve, reject });
        else resolve();
        this.#host.schedule(this);
      }),
    );
  }

  /** Ends our side after the queued data: END_STREAM on the last DATA, or trailers with END_STREAM. */
  end(trailers?: HeaderList): void {
    if (this.isClosed || this.endPending || this.localEnded) return;
    this.endPending = true;
    this.endTrailers = trailers && trailers.length > 0 ? trailers : null;
    this.#host.schedule(this);
  }

  /** Resets the stream (RST_STREAM with `code`, default CANCEL); pending writes and reads fail. */
  reset(code: number = CANCEL): void {
    if (this.isClosed) return;
    this.#host.sendReset(this, code);
    this.fail(new Http2Error(code, `stream ${this.id} reset locally: ${errorName(code)}`, this.id), false);
  }

  /**
   * The next DATA chunk, or null at END_STREAM. Rejects with Http2Error when the stream is reset.
   * The chunk is a view the caller may keep.
   */
  read(): Promise<Uint8Array | null> {
    const chunk = this.#chunks.shift();
    if (chunk !== undefined) {
      this.#host.consumed(this, chunk.length);
      return Promise.resolve(chunk);
    }
    if (this.#error !== null) return handled(Promise.reject(this.#error));
    if (this.remoteEnded) return Promise.resolve(null);
    this.#waiter ??= new Deferred();
    return this.#waiter.promise;
  }

  /** The body as an async iterator of chunks (throws Http2Error on a reset). */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, undefined> {
    for (;;) {
      const chunk = await this.read();
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** Octets received and not yet read. */
  get bufferedBytes(): number {
    let n = 0;
    for (const c of this.#chunks) n += c.length;
    return n;
  }

  /** @internal DATA received (already counted against the windows). */
  pushData(chunk: Uint8Array): void {
    const w = this.#waiter;
    if (w !== null) {
      this.#waiter = null;
      this.#host.consumed(this, chunk.length);
      w.resolve(chunk);
    } else {
      this.#chunks.push(chunk);
    }
  }

  /** @internal The peer ended its side (END_STREAM), with trailers or not. */
  pushEnd(trailers: HeaderList | undefined): void {
    this.remoteEnded = true;
    this.#trailers.resolve(trailers);
    if (this.#chunks.length === 0 && this.#waiter !== null) {
      const w = this.#waiter;
      this.#waiter = null;
      w.resolve(null);
    }
    this.maybeClose();
  }

  /** @internal Client: the final response head arrived. */
  pushResponse(headers: HeaderList): void {
    this.headReceived = true;
    this.#response.resolve(headers);
  }

  /** @internal Closes the stream when both sides have ended. */
  maybeClose(): void {
    if (this.isClosed || !this.localEnded || !this.remoteEnded) return;
    this.isClosed = true;
    this.#closed.resolve(CLOSED_NORMALLY);
  }

  /**
   * @internal RST_STREAM(NO_ERROR) after the peer's END_STREAM: our send side closes (pending writes
   * fail); the data and trailers received stay readable, read() returns null after them.
   */
  stopSending(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const error = new Http2Error(
      NO_ERROR,
      `stream ${this.id}: the peer stopped the stream (NO_ERROR)`,
      this.id,
    );
    for (const w of this.sendQueue) w.reject(error);
    this.sendQueue = [];
    this.#response.reject(error);
    this.#closed.resolve({ code: NO_ERROR, remote: true });
  }

  /** @internal The stream is reset or its connection is gone: everything pending fails with `error`. */
  fail(error: Http2Error, remote: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.#error = error;
    this.#chunks = [];
    for (const w of this.sendQueue) w.reject(error);
    this.sendQueue = [];
    this.#response.reject(error);
    this.#trailers.reject(error);
    if (this.#waiter !== null) this.#waiter.reject(error);
    this.#waiter = null;
    this.#closed.resolve({ code: error.code, remote });
  }
}
