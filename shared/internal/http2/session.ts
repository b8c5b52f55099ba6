/**
 * The state of one HTTP/2 connection and its outbound side: settings of both ends, the streams, the
 * connection windows, the DATA pump (round robin over streams, within the stream and connection send
 * windows and the socket's backpressure), RST_STREAM, GOAWAY and the end of the connection. The
 * inbound side is `receive.ts`; the public API is `connection.ts`.
 *
 * @module
 */
import type { Duplex } from "node:stream";
import {
  CANCEL,
  DATA,
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  errorName,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_HEADER,
  goawayFrame,
  HEADERS,
  headersFrames,
  INTERNAL_ERROR,
  MIN_MAX_FRAME_SIZE,
  NO_ERROR,
  putFrameHeader,
  REFUSED_STREAM,
  rstStreamFrame,
  windowUpdateFrame,
} from "./frame.ts";
import { FrameWriter } from "./frame_writer.ts";
import type { HeaderList } from "./headers.ts";
import { HpackDecoder, HpackEncoder } from "./hpack.ts";
import { Http2Error, type Http2Limits } from "./limits.ts";
import { Http2Stream, type StreamHost } from "./stream.ts";

/** How a connection ended. */
export interface CloseInfo {
  /** The GOAWAY error code sent or received (0: NO_ERROR, also when the socket just closed). */
  code: number;
  /** Whether the peer ended it (its GOAWAY or its close) rather than this side. */
  remote: boolean;
  /** What happened, for logs. */
  reason: string;
}

/** A GOAWAY the peer sent. */
export interface GoawayInfo {
  /** Highest stream id the peer may still process; our streams above it were refused (retry-safe). */
  lastStreamId: number;
  /** RFC 9113 error code. */
  code: number;
  /** Debug data as latin1, at most 256 characters. */
  debug: string;
}

/** Ids of streams recently reset by this side: frames still in flight for them are ignored. */
const RECENT_RESETS = 64;

/** Time to let a GOAWAY reach the peer before the socket is destroyed, ms. */
const CLOSE_LINGER_MS = 1000;

/** @internal The connection's state, shared by connection.ts and receive.ts. */
export class Http2Session implements StreamHost {
  readonly socket: Duplex;
  readonly server: boolean;
  readonly limits: Http2Limits;
  readonly writer: FrameWriter;
  readonly encoder = new HpackEncoder();
  readonly decoder: HpackDecoder;
  readonly streams = new Map<number, Http2Stream>();
  readonly log: (message: string) => void;
  onStream: (stream: Http2Stream) => void = () => {};
  onGoaway: (info: GoawayInfo) => void = () => {};

  // Peer settings.
  peerMaxConcurrent = 100;
  peerInitialWindow = DEFAULT_WINDOW;
  peerMaxFrameSize = MIN_MAX_FRAME_SIZE;
  settingsReceived = false;

  // Connection windows.
  connSendWindow = DEFAULT_WINDOW;
  connRecvWindow: number;
  connRecvUnacked = 0;

  // Stream ids.
  /** Highest stream id the peer opened (server: client ids; client: none, push is off). */
  lastPeerStreamId = 0;
  /** Client: the next id to use. */
  nextStreamId = 1;
  readonly recentResets = new Int32Array(RECENT_RESETS);
  recentResetPos = 0;

  // Flood accounting (Envoy's ProtocolConstraints).
  emptyFrames = 0;
  priorityFrames = 0;
  windowUpdateFrames = 0;
  openedStreams = 0;
  closedStreams = 0;
  prematureResets = 0;

  // GOAWAY and closing.
  /** Last stream id in the GOAWAY we sent, or -1. */
  goawaySentId = -1;
  /** Last stream id in the GOAWAY the peer sent, or -1. */
  goawayReceivedId = -1;
  isClosed = false;
  closeInfo: CloseInfo | null = null;
  #resolveClosed!: (info: CloseInfo) => void;
  readonly closed: Promise<CloseInfo> = new Promise((r) => this.#resolveClosed = r);
  #lingerTimer: ReturnType<typeof setTimeout> | undefined;

  // DATA pump.
  readonly #sendable = new Set<Http2Stream>();
  #pumpScheduled = false;
  #waitingDrain = false;

  constructor(socket: Duplex, server: boolean, limits: Http2Limits, log: (message: string) => void) {
    this.socket = socket;
    this.server = server;
    this.limits = limits;
    this.log = log;
    this.connRecvWindow = limits.initialConnectionWindowSize;
    this.decoder = new HpackDecoder(limits.headerTableSize, limits.maxHeaders, limits.maxHeaderListBytes);
    this.writer = new FrameWriter(
      socket,
      limits.maxOutboundFrames,
      limits.maxOutboundControlFrames,
      (what) => this.terminate(ENHANCE_YOUR_CALM, `outbound flood: ${what}`, false, true),
      limits.writeBufferBytes,
    );
  }

  /** Streams open now. */
  get activeStreams(): number {
    return this.streams.size;
  }

  // StreamHost.

  /**
   * Client: HEADERS at once (stream ids must go out in order; the peer's concurrency limit bounds
   * them). Server: a response head or trailers wait, as DATA does, until the writer is writable, so
   * that a burst of answers never trips our own `maxOutboundFrames`.
   */
  sendHeaders(stream: Http2Stream, headers: HeaderList, endStream: boolean): void {
    if (this.server && (stream.heldHeads !== null || !this.writer.writable)) {
      (stream.heldHeads ??= []).push([headers, endStream]);
      if (endStream) stream.endPending = true;
      return this.schedule(stream);
    }
    this.#writeHeaders(stream, headers, endStream);
  }

  #writeHeaders(stream: Http2Stream, headers: HeaderList, endStream: boolean): void {
    const block = this.encoder.encode(headers, FRAME_HEADER);
    const length = block.length - FRAME_HEADER;
    if (length <= this.peerMaxFrameSize) {
      const flags = FLAG_END_HEADERS | (endStream ? FLAG_END_STREAM : 0);
      putFrameHeader(block, 0, length, HEADERS, flags, stream.id);
      this.writer.frame(block);
    } else {
      const fragments = block.subarray(FRAME_HEADER);
      this.writer.frame(headersFrames(stream.id, fragments, endStream, this.peerMaxFrameSize));
    }
    if (endStream) this.#afterLocalEnd(stream);
  }

  sendReset(stream: Http2Stream, code: number): void {
    this.writer.control(rstStreamFrame(stream.id, code));
    this.rememberReset(stream.id);
    this.forget(stream);
  }

  schedule(stream: Http2Stream): void {
    this.#sendable.add(stream);
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(this.#pumpNow);
  }

  consumed(stream: Http2Stream, n: number): void {
    stream.recvUnacked += n;
    if (stream.remoteEnded || stream.isClosed) return;
    if (stream.recvUnacked >= this.limits.initialStreamWindowSize / 2) {
      this.writer.frame(windowUpdateFrame(stream.id, stream.recvUnacked));
      stream.recvWindow += stream.recvUnacked;
      stream.recvUnacked = 0;
    }
  }

  /** Counts DATA against the connection window and returns it to the peer in half-window steps. */
  connectionConsumed(n: number): void {
    this.connRecvUnacked += n;
    if (this.connRecvUnacked >= this.limits.initialConnectionWindowSize / 2) {
      this.writer.frame(windowUpdateFrame(0, this.connRecvUnacked));
      this.connRecvWindow += this.connRecvUnacked;
      this.connRecvUnacked = 0;
    }
  }

  /** Creates a stream with this side's receive window and the peer's send window. */
  newStream(id: number, headers: HeaderList): Http2Stream {
    const stream = new Http2Stream(
      id,
      headers,
      this,
      this.limits.initialStreamWindowSize,
      this.peerInitialWindow,
    );
    this.streams.set(id, stream);
    this.openedStreams++;
    return stream;
  }

  /** Removes a closed stream; ends a draining connection once none is left. */
  forget(stream: Http2Stream): void {
    if (!this.streams.delete(stream.id)) return;
    this.#sendable.delete(stream);
    this.closedStreams++;
    if (this.streams.size === 0 && (this.goawaySentId >= 0 || this.goawayReceivedId >= 0)) {
      queueMicrotask(() => {
        if (this.streams.size === 0) {
          this.terminate(NO_ERROR, "drained after GOAWAY", this.goawayReceivedId >= 0, false);
        }
      });
    }
  }

  /** A stream error (RFC 9113 5.4.2): RST_STREAM with `code`, the stream fails. */
  streamError(id: number, code: number, reason: string): void {
    this.log(`http2: stream ${id}: ${errorName(code)}: ${reason}`);
    const stream = this.streams.get(id);
    this.writer.control(rstStreamFrame(id, code));
    this.rememberReset(id);
    if (stream) {
      stream.fail(new Http2Error(code, `stream ${id}: ${reason}`, id), false);
      this.forget(stream);
    }
  }

  /** Whether `id` names a stream that was never opened (idle, RFC 9113 5.1). */
  isIdle(id: number): boolean {
    const peerOpened = this.server ? (id & 1) === 1 : (id & 1) === 0;
    return peerOpened ? id > this.lastPeerStreamId : id >= this.nextStreamId;
  }

  rememberReset(id: number): void {
    this.recentResets[this.recentResetPos] = id;
    this.recentResetPos = (this.recentResetPos + 1) % RECENT_RESETS;
  }

  recentlyReset(id: number): boolean {
    return this.recentResets.includes(id);
  }

  /** Stream `stream` closed normally on our side: forget it when the peer's side is done too. */
  #afterLocalEnd(stream: Http2Stream): void {
    stream.localEnded = true;
    stream.maybeClose();
    if (stream.isClosed) this.forget(stream);
  }

  /** {@link pump} from a microtask or an event: a throw there would end the process, so it ends this connection. */
  readonly #pumpNow = (): void => {
    try {
      this.pump();
    } catch (e) {
      this.log(`http2: internal error: ${e instanceof Error ? e.stack : e}`);
      this.terminate(INTERNAL_ERROR, "internal error", false, true);
    }
  };

  /** Sends DATA of the scheduled streams while the windows and the socket allow. */
  pump(): void {
    this.#pumpScheduled = false;
    if (this.isClosed) return;
    for (const stream of this.#sendable) {
      if (!this.writer.writable) return this.#waitDrain();
      this.#pumpStream(stream);
      if (stream.sendQueue.length === 0 && !stream.endPending && stream.heldHeads === null) {
        this.#sendable.delete(stream);
      } else if (stream.endPending && stream.localEnded) this.#sendable.delete(stream);
      if (this.connSendWindow <= 0) return;
    }
    // The last stream filled the socket: nothing else would pump again (a lone stream's write stalled).
    if (this.#sendable.size > 0 && !this.writer.writable) this.#waitDrain();
  }

  #pumpStream(stream: Http2Stream): void {
    const heads = stream.heldHeads;
    if (heads !== null) {
      while (heads.length > 0) {
        if (!this.writer.writable) return;
        const [headers, endStream] = heads.shift()!;
        this.#writeHeaders(stream, headers, endStream);
      }
      stream.heldHeads = null;
    }
    const maxFrame = this.peerMaxFrameSize;
    while (stream.sendQueue.length > 0) {
      const w = stream.sendQueue[0];
      const left = w.chunk.length - stream.sendOffset;
      const n = Math.min(left, stream.sendWindow, this.connSendWindow, maxFrame);
      if (left > 0 && n <= 0) return;
      const last = n === left;
      // Whole chunks queued behind a finished one share its frame (a gRPC prefix and its message):
      // one DATA frame instead of one per write, the payloads still views.
      if (last && stream.sendQueue.length > 1) {
        const joined = this.#joinable(stream, n);
        if (joined > 1) {
          if (this.#pumpJoined(stream, joined)) return;
          if (!this.writer.writable) return;
          continue;
        }
      }
      const end = last && stream.sendQueue.length === 1 && stream.endPending && stream.endTrailers === null;
      const header = new Uint8Array(FRAME_HEADER);
      putFrameHeader(header, 0, n, DATA, end ? FLAG_END_STREAM : 0, stream.id);
      this.writer.data(header, w.chunk.subarray(stream.sendOffset, stream.sendOffset + n));
      stream.sendWindow -= n;
      this.connSendWindow -= n;
      if (last) {
        stream.sendQueue.shift();
        stream.sendOffset = 0;
        w.resolve();
      } else {
        stream.sendOffset += n;
      }
      if (end) return this.#afterLocalEnd(stream);
      if (!this.writer.writable) return;
    }
    if (!stream.endPending || stream.localEnded) return;
    if (stream.endTrailers !== null) return this.sendHeaders(stream, stream.endTrailers, true);
    const header = new Uint8Array(FRAME_HEADER);
    putFrameHeader(header, 0, 0, DATA, FLAG_END_STREAM, stream.id);
    this.writer.data(header, header.subarray(0, 0));
    this.#afterLocalEnd(stream);
  }

  /** How many queued writes, from the first (`first` octets left of it), fit in one frame and the windows. */
  #joinable(stream: Http2Stream, first: number): number {
    const budget = Math.min(stream.sendWindow, this.connSendWindow, this.peerMaxFrameSize);
    let total = first;
    let k = 1;
    while (k < stream.sendQueue.length && total + stream.sendQueue[k].chunk.length <= budget) {
      total += stream.sendQueue[k].chunk.length;
      k++;
    }
    return k;
  }

  /** Sends the first `k` queued writes as one DATA frame; true when it ended the stream. */
  #pumpJoined(stream: Http2Stream, k: number): boolean {
    const writes = stream.sendQueue.splice(0, k);
    const parts = writes.map((w, i) => (i === 0 ? w.chunk.subarray(stream.sendOffset) : w.chunk));
    stream.sendOffset = 0;
    let n = 0;
    for (const p of parts) n += p.length;
    const end = stream.sendQueue.length === 0 && stream.endPending && stream.endTrailers === null;
    const header = new Uint8Array(FRAME_HEADER);
    putFrameHeader(header, 0, n, DATA, end ? FLAG_END_STREAM : 0, stream.id);
    this.writer.data(header, ...parts);
    stream.sendWindow -= n;
    this.connSendWindow -= n;
    for (const w of writes) w.resolve();
    if (end) this.#afterLocalEnd(stream);
    return end;
  }

  /** Pumps again once the socket drained (or, when only our own queue was full, after it is flushed). */
  #waitDrain(): void {
    if (this.#waitingDrain || this.isClosed) return;
    this.#waitingDrain = true;
    const again = (): void => {
      this.#waitingDrain = false;
      this.#pumpNow();
    };
    if (this.socket.writableNeedDrain) this.socket.once("drain", again);
    // Held by the frame count, not the octets: queued and in-flight frames count less once a write completes.
    else if (this.writer.pending) this.writer.afterWrite(again);
    else setTimeout(again, 0);
  }

  /** A window grew: streams blocked on it may send again. */
  wake(stream?: Http2Stream): void {
    if (stream) {
      if (
        stream.sendQueue.length > 0 || (stream.endPending && !stream.localEnded) || stream.heldHeads !== null
      ) {
        this.schedule(stream);
      }
      return;
    }
    for (const s of this.streams.values()) this.wake(s);
  }

  /** Sends GOAWAY NO_ERROR and lets the streams below the last id finish (RFC 9113 6.8). */
  goaway(code: number, debug: string): void {
    if (this.isClosed) return;
    if (code !== NO_ERROR) return this.terminate(code, debug || errorName(code), false, true);
    if (this.goawaySentId < 0) {
      this.goawaySentId = this.lastPeerStreamId;
      this.writer.frame(goawayFrame(this.lastPeerStreamId, NO_ERROR, debug));
    }
    if (this.streams.size === 0) this.terminate(NO_ERROR, debug || "closed", false, false);
  }

  /** The peer sent GOAWAY: our streams above `lastStreamId` are refused; no new ones. */
  peerGoaway(info: GoawayInfo): void {
    const last = this.goawayReceivedId < 0
      ? info.lastStreamId
      : Math.min(this.goawayReceivedId, info.lastStreamId);
    this.goawayReceivedId = last;
    for (const stream of [...this.streams.values()]) {
      if (stream.id > last && (stream.id & 1) === (this.server ? 0 : 1)) {
        stream.fail(
          new Http2Error(REFUSED_STREAM, `stream ${stream.id} refused by the peer's GOAWAY`, stream.id),
          true,
        );
        this.forget(stream);
      }
    }
    try {
      this.onGoaway(info);
    } catch (e) {
      this.log(`http2: onGoaway threw: ${e}`);
    }
    if (this.streams.size === 0) {
      this.terminate(info.code, `peer GOAWAY ${errorName(info.code)}`, true, false);
    }
  }

  /**
   * Ends the connection: with `sendGoaway`, a GOAWAY with `code` first (a connection error, RFC 9113
   * 5.4.1); every open stream fails; the socket is ended and destroyed after a short linger.
   */
  terminate(code: number, reason: string, remote: boolean, sendGoaway: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (code !== NO_ERROR || sendGoaway) this.log(`http2: connection ${errorName(code)}: ${reason}`);
    this.writer.finish(
      sendGoaway ? goawayFrame(this.lastPeerStreamId, code, code === NO_ERROR ? "" : reason) : null,
    );
    const error = new Http2Error(code === NO_ERROR ? CANCEL : code, `connection closed: ${reason}`);
    for (const stream of this.streams.values()) stream.fail(error, remote);
    this.streams.clear();
    this.#sendable.clear();
    this.closeInfo = { code, remote, reason };
    this.#resolveClosed(this.closeInfo);
    const socket = this.socket;
    if (!socket.destroyed) {
      // Reading goes on (and is discarded) until the peer closes or the linger ends: a socket closed
      // with unread bytes sends a reset, which can destroy our GOAWAY in the peer's receive queue.
      socket.end();
      this.#lingerTimer = setTimeout(() => socket.destroy(), CLOSE_LINGER_MS);
      socket.once("close", () => clearTimeout(this.#lingerTimer));
    }
  }
}
