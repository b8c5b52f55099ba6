/**
 * The outbound side of a connection: frames are queued during one turn of the event loop and written
 * together (one corked batch), and counted until the socket has taken them, as Envoy's
 * `max_outbound_frames` and `max_outbound_control_frames` count its output buffer: a peer that makes
 * us answer (PING, SETTINGS, RST_STREAM) faster than it reads trips the limit and the connection is
 * closed, so memory stays bounded.
 *
 * @module
 */
import type { Duplex } from "node:stream";

/** Batches up to this many octets are copied into one buffer and written at once. */
const COALESCE_BYTES = 16 * 1024;

/**
 * In a larger batch, parts up to this many octets are copied together with their small neighbours:
 * a write to a node:net socket costs more than copying a frame header, a gRPC prefix and nonce, or a
 * small message (a policy change's ~1,000 responses per connection were ~3 writes each).
 */
const SMALL_PART = 2048;

function concat(parts: readonly Uint8Array[], from = 0, to = parts.length): Uint8Array {
  let total = 0;
  for (let i = from; i < to; i++) total += parts[i].length;
  const out = new Uint8Array(total);
  let o = 0;
  for (let i = from; i < to; i++) {
    out.set(parts[i], o);
    o += parts[i].length;
  }
  return out;
}

/** The parts to write: runs of small parts joined, larger ones (shared response bytes) as they are. */
function coalesceSmall(parts: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let run = 0;
  const endRun = (i: number): void => {
    if (i - run === 1) out.push(parts[run]);
    else if (i > run) out.push(concat(parts, run, i));
  };
  for (let i = 0; i < parts.length; i++) {
    if (parts[i].length <= SMALL_PART) continue;
    endRun(i);
    out.push(parts[i]);
    run = i + 1;
  }
  endRun(parts.length);
  return out;
}

/** Queues frames and writes them in batches. */
export class FrameWriter {
  readonly #socket: Duplex;
  readonly #maxFrames: number;
  readonly #maxControl: number;
  readonly #onFlood: (what: string) => void;
  readonly #highWater: number;
  readonly #ownFrames: number;
  #queue: Uint8Array[] = [];
  #queuedFrames = 0;
  #queuedControl = 0;
  #queuedBytes = 0;
  /** Frames and control frames of batches handed to the socket and not yet written, oldest first. */
  #inflight: number[] = [];
  #afterWrite: (() => void) | null = null;
  #inflightFrames = 0;
  #inflightControl = 0;
  #scheduled = false;
  #closed = false;
  #finished = false;
  /** DATA frames written (for the WINDOW_UPDATE flood limit). */
  dataFramesSent = 0;

  /**
   * @param highWater socket output, octets, above which DATA waits for 'drain' (`Http2Limits.writeBufferBytes`)
   * @param maxFrames `maxOutboundFrames`; what this side sends on its own stops at half of it (see {@link writable})
   */
  constructor(
    socket: Duplex,
    maxFrames: number,
    maxControl: number,
    onFlood: (what: string) => void,
    highWater: number,
  ) {
    this.#socket = socket;
    this.#highWater = highWater;
    this.#maxFrames = maxFrames;
    this.#ownFrames = Math.floor(maxFrames / 2);
    this.#maxControl = maxControl;
    this.#onFlood = onFlood;
  }

  /** Queues a frame (HEADERS, GOAWAY, WINDOW_UPDATE, ...). */
  frame(buf: Uint8Array): void {
    this.#push(buf, false);
  }

  /** Queues a control frame the peer made us send (PING/SETTINGS ACK, RST_STREAM). */
  control(buf: Uint8Array): void {
    this.#push(buf, true);
  }

  /** Queues a DATA frame: its 9-octet header and the payload views (one or more, in order). */
  data(header: Uint8Array, ...payload: Uint8Array[]): void {
    if (this.#closed) return;
    this.#queue.push(header);
    let bytes = header.length;
    for (const p of payload) {
      if (p.length > 0) this.#queue.push(p);
      bytes += p.length;
    }
    this.#queuedBytes += bytes;
    this.dataFramesSent++;
    this.#count(false);
  }

  /**
   * Whether the socket can take more of what this side sends on its own (DATA, response HEADERS and
   * trailers) now; otherwise the session waits for 'drain'. Bounded in octets (the high-water mark)
   * and in frames: half of `maxOutboundFrames`, so that small frames (1 MiB of 100-octet gRPC
   * messages is 10,000 frames) never trip our own flood limit, and the other half stays for what the
   * peer makes us send (ACKs, RST_STREAM, WINDOW_UPDATE), which the limits keep counting.
   */
  get writable(): boolean {
    return !this.#closed && this.#socket.writableLength + this.#queuedBytes < this.#highWater &&
      this.#queuedFrames + this.#inflightFrames < this.#ownFrames;
  }

  /** Writes what is queued now (before closing the socket). */
  flush(): void {
    this.#scheduled = false;
    if (this.#queue.length === 0 || this.#finished) return;
    const socket = this.#socket;
    const queue = this.#queue;
    const bytes = this.#queuedBytes;
    this.#inflight.push(this.#queuedFrames, this.#queuedControl);
    this.#inflightFrames += this.#queuedFrames;
    this.#inflightControl += this.#queuedControl;
    this.#queuedFrames = this.#queuedControl = this.#queuedBytes = 0;
    if (socket.destroyed || !socket.writable) {
      this.#queue = [];
      return;
    }
    if (queue.length === 1 || bytes <= COALESCE_BYTES) {
      // One write of a copy costs less than a write per frame (each allocates in node:stream).
      socket.write(queue.length === 1 ? queue[0] : concat(queue), this.#written);
      queue.length = 0;
      return;
    }
    this.#queue = [];
    const writes = coalesceSmall(queue);
    if (writes.length === 1) return void socket.write(writes[0], this.#written);
    socket.cork();
    for (let i = 0; i < writes.length - 1; i++) socket.write(writes[i]);
    socket.write(writes[writes.length - 1], this.#written);
    socket.uncork();
  }

  /**
   * The last write: what is queued (dropped after a flood) and then `last` (a GOAWAY), written even
   * after a flood so that the peer learns why; nothing is written after it.
   */
  finish(last: Uint8Array | null): void {
    if (this.#closed && this.#queue.length === 0) {
      if (last !== null && !this.#finished) this.#writeDirect(last);
    } else {
      if (last !== null) {
        this.#queue.push(last);
        this.#queuedBytes += last.length;
      }
      this.flush();
    }
    this.#finished = true;
    this.#closed = true;
  }

  #writeDirect(buf: Uint8Array): void {
    const socket = this.#socket;
    if (!socket.destroyed && socket.writable) socket.write(buf);
  }

  #push(buf: Uint8Array, control: boolean): void {
    if (this.#closed) return;
    this.#queue.push(buf);
    this.#queuedBytes += buf.length;
    this.#count(control);
  }

  #count(control: boolean): void {
    this.#queuedFrames++;
    if (control) this.#queuedControl++;
    if (this.#queuedFrames + this.#inflightFrames > this.#maxFrames) {
      return this.#flood(`more than ${this.#maxFrames} outbound frames queued`);
    }
    if (this.#queuedControl + this.#inflightControl > this.#maxControl) {
      return this.#flood(`more than ${this.#maxControl} outbound control frames queued`);
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#flushNow);
    }
  }

  #flood(what: string): void {
    this.#closed = true;
    this.#queue = [];
    this.#onFlood(what);
  }

  /** A throw in a microtask would end the process: a bug here closes this connection instead. */
  readonly #flushNow = (): void => {
    try {
      this.flush();
    } catch (e) {
      console.error(`http2: frame writer: ${e instanceof Error ? e.stack : e}`);
      this.#closed = this.#finished = true;
      this.#socket.destroy();
    }
  };

  /** Whether frames are queued or a write to the socket has not completed yet. */
  get pending(): boolean {
    return this.#queue.length > 0 || this.#inflight.length > 0;
  }

  /** Calls `fn` once, after the socket's next completed write (in-flight frames then count less). */
  afterWrite(fn: () => void): void {
    this.#afterWrite = fn;
  }

  readonly #written = (): void => {
    this.#inflightFrames -= this.#inflight.shift()!;
    this.#inflightControl -= this.#inflight.shift()!;
    const fn = this.#afterWrite;
    this.#afterWrite = null;
    fn?.();
  };
}
