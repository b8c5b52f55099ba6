/**
 * {@link SocketIo} over a `Deno.Conn` (Deno.connect, Deno.connectTls): Deno's own sockets, without the
 * node-streams layer of node:net and node:tls (issue 17, item 2). The client proxy's HTTP/1.1 mesh leg
 * uses it over `Deno.connectTls` (../outbound/deno_mtls.ts, `--meshTlsClient deno`); on plain TCP (the
 * server proxy's application side) it measured no less CPU per request than node:net, so that side
 * stays on node:net (./README.md "Socket views").
 *
 * Reading: one read is outstanding while fewer than `highWater` bytes are queued; above it no read is
 * issued, so the kernel's receive buffer fills and TCP flow control holds back the sender, and reading
 * resumes once the reader took the queue below half. Reads land in a 16 KiB slab (a TLS record's
 * plaintext at most) that successive reads fill from the front (a new slab when less than 4 KiB is
 * left): chunks are views of it that are never overwritten, so a reader may keep or forward a chunk as
 * it is, and small reads share one allocation instead of one 64 KiB buffer and a copy each (node:net
 * in Deno).
 *
 * Writing: chunks are queued and written by one loop; chunks queued while a write is in flight (or
 * while corked) go out as one write. `end()` sends FIN once the queue is written (`closeWrite`), the
 * read side stays open; the connection closes when both directions ended, or on `destroy()`, an
 * error, or a write failure.
 *
 * Deno has no SO_LINGER: there is no reset(), and a lingering close is a FIN after the last write.
 *
 * @module
 */
import { QueuedIo } from "./socket_io.ts";

const SLAB = 16 * 1024;
const MIN_READ = 4 * 1024;
/** Queued chunks up to this many bytes are joined into one write. */
const JOIN_LIMIT = 64 * 1024;

/** {@link SocketIo} over a connected `Deno.Conn` (plain TCP or TLS). */
export class DenoConnIo extends QueuedIo {
  /** The connection. */
  readonly conn: Deno.Conn;
  bytesOut = 0;
  readonly #writeHighWater: number;
  #reading = false;
  /** The read loop and the write loop while they run: what {@link settled} waits for. */
  #readLoop: Promise<void> | null = null;
  #writeLoop: Promise<void> | null = null;
  #slab = new Uint8Array(0);
  #slabUsed = 0;
  #out: Uint8Array[] = [];
  #outBytes = 0;
  #writing = false;
  #corked = 0;
  #endWanted = false;
  #writeEnded = false;

  /**
   * @param conn a connected (for TLS: handshake done or under way) connection, owned from now on
   * @param highWater bytes queued unread above which reading stops (flow control)
   * @param writeHighWater bytes queued unwritten above which {@link write} returns false
   */
  constructor(conn: Deno.Conn, highWater = 64 * 1024, writeHighWater = 64 * 1024) {
    super(highWater);
    this.conn = conn;
    this.#writeHighWater = writeHighWater;
    this.#read();
  }

  /**
   * Resolves once the read and write operations under way finished (they fail soon after a close):
   * an owner that closes its connections awaits it, so no operation outlives it.
   */
  settled(): Promise<void> {
    return Promise.all([this.#readLoop, this.#writeLoop]).then(() => {});
  }

  #read(): void {
    if (!this.#reading) this.#readLoop = this.#pump();
  }

  #write(): void {
    if (!this.#writing) this.#writeLoop = this.#flush();
  }

  /** Reads until the queue passes the high-water mark, the end, an error or the close. */
  async #pump(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      while (!this.closed && !this.ended && (this.discard || this.queued <= this.highWater)) {
        if (this.#slab.length - this.#slabUsed < MIN_READ) {
          this.#slab = new Uint8Array(SLAB);
          this.#slabUsed = 0;
        }
        const start = this.#slabUsed;
        const n = await this.conn.read(this.#slab.subarray(start));
        if (this.closed) return;
        if (n === null) {
          this.ended = true;
          this.notify();
          if (this.#writeEnded) this.destroy();
          return;
        }
        if (n === 0) continue;
        if (!this.discard) this.#slabUsed = start + n;
        this.received(this.#slab.subarray(start, start + n));
      }
    } catch (e) {
      this.#fail(e);
    } finally {
      this.#reading = false;
    }
  }

  #fail(e: unknown): void {
    if (this.closed) return;
    if (this.error === null) this.error = e instanceof Error ? e : new Error(String(e));
    this.notify();
    this.destroy();
  }

  protected lowWater(): void {
    this.#read();
  }

  write(chunk: Uint8Array): boolean {
    if (this.closed) throw new Error("connection closed");
    if (this.#endWanted) throw new Error("write after end");
    if (chunk.length > 0) {
      this.#out.push(chunk);
      this.#outBytes += chunk.length;
      if (this.#corked === 0) this.#write();
    }
    return this.#outBytes < this.#writeHighWater;
  }

  /** Writes the queue, joining what piled up into one write, then FIN if {@link end} asked for it. */
  async #flush(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#out.length > 0 && !this.closed) {
        const buf = this.#take();
        let off = 0;
        while (off < buf.length) {
          off += await this.conn.write(off === 0 ? buf : buf.subarray(off));
          if (this.closed) return;
        }
        this.bytesOut += buf.length;
        this.#outBytes -= buf.length;
        if (this.#outBytes < this.#writeHighWater) this.drained();
      }
      if (this.#endWanted && !this.closed) await this.#closeWrite();
    } catch (e) {
      this.#fail(e);
    } finally {
      this.#writing = false;
    }
  }

  /** The next write: the first queued chunk, or the queued chunks joined while they fit JOIN_LIMIT. */
  #take(): Uint8Array {
    const out = this.#out;
    let n = 0;
    let total = 0;
    while (n < out.length && (n === 0 || total + out[n].length <= JOIN_LIMIT)) total += out[n++].length;
    if (n === 1) return out.shift()!;
    const buf = new Uint8Array(total);
    let at = 0;
    for (const c of out.splice(0, n)) {
      buf.set(c, at);
      at += c.length;
    }
    return buf;
  }

  async #closeWrite(): Promise<void> {
    if (this.#writeEnded) return;
    this.#writeEnded = true;
    await this.conn.closeWrite();
    if (this.ended) this.destroy();
  }

  get needsDrain(): boolean {
    return !this.closed && this.#outBytes >= this.#writeHighWater;
  }

  drain(): Promise<void> {
    if (!this.needsDrain) return Promise.resolve();
    return this.untilDrained();
  }

  cork(): void {
    this.#corked++;
  }

  uncork(): void {
    if (this.#corked === 0) return;
    this.#corked--;
    if (this.#corked === 0 && this.#out.length > 0 && !this.closed) this.#write();
  }

  end(): void {
    if (this.closed || this.#endWanted) return;
    this.#endWanted = true;
    this.#corked = 0;
    this.#write();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopLinger();
    this.#out = [];
    this.#outBytes = 0;
    try {
      this.conn.close();
    } catch {
      // Already closed by Deno (a failed read or write).
    }
    // As node's "close" event, the callbacks run after the caller's current step.
    queueMicrotask(() => this.closedNow());
  }

  lingerClose(last: Uint8Array | null, timeoutMs = 2000): void {
    if (this.closed) return;
    this.dropQueue();
    if (last !== null && !this.#endWanted) this.write(last);
    // Closes when the reply is out (FIN sent) and the peer's FIN came, or at the deadline.
    this.end();
    this.#read();
    this.lingerDeadline(timeoutMs);
  }
}
