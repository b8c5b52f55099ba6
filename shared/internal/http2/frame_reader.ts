/**
 * The incremental frame reader: fed with the chunks a socket delivers, it yields whole frames. The
 * payload of a frame is a view that stays valid (a frame split across chunks is assembled in a new
 * buffer of its own, never a reused one), so DATA can be handed on without a copy.
 *
 * @module
 */
import { FRAME_HEADER } from "./frame.ts";

const EMPTY = new Uint8Array(0);

/** A frame whose declared length is over the limit: the connection error FRAME_SIZE_ERROR. */
export class FrameSizeError extends Error {}

/** Reads frames; reuse one per connection. Fields describe the current frame after {@link next}. */
export class FrameReader {
  type = 0;
  flags = 0;
  streamId = 0;
  payload: Uint8Array = EMPTY;
  /** SETTINGS_MAX_FRAME_SIZE this side advertised: a longer frame is a FRAME_SIZE_ERROR. */
  maxFrameSize: number;
  #chunk: Uint8Array = EMPTY;
  #pos = 0;
  /** A frame being assembled across chunks. */
  #partial: Uint8Array | null = null;
  #partialLen = 0;

  constructor(maxFrameSize: number) {
    this.maxFrameSize = maxFrameSize;
  }

  /** Adds a chunk; call {@link next} until it returns false before pushing the next one. */
  push(chunk: Uint8Array): void {
    this.#chunk = chunk;
    this.#pos = 0;
  }

  /** Octets buffered that do not make a whole frame yet. */
  get buffered(): number {
    return this.#partialLen + this.#chunk.length - this.#pos;
  }

  /** Reads the next whole frame into the fields; false when more bytes are needed. Throws FrameSizeError. */
  next(): boolean {
    if (this.#partial !== null) return this.#continuePartial();
    const chunk = this.#chunk;
    const avail = chunk.length - this.#pos;
    if (avail === 0) return this.#release();
    if (avail < FRAME_HEADER) return this.#startPartial(FRAME_HEADER);
    const p = this.#pos;
    const len = (chunk[p] << 16) | (chunk[p + 1] << 8) | chunk[p + 2];
    if (len > this.maxFrameSize) throw new FrameSizeError(`frame of ${len} octets over ${this.maxFrameSize}`);
    if (avail < FRAME_HEADER + len) return this.#startPartial(FRAME_HEADER + len);
    this.#header(chunk, p);
    this.payload = chunk.subarray(p + FRAME_HEADER, p + FRAME_HEADER + len);
    this.#pos = p + FRAME_HEADER + len;
    return true;
  }

  #header(src: Uint8Array, p: number): void {
    this.type = src[p + 3];
    this.flags = src[p + 4];
    this.streamId = ((src[p + 5] & 0x7f) << 24 | src[p + 6] << 16 | src[p + 7] << 8 | src[p + 8]) >>> 0;
  }

  /** Copies what is left of the chunk into a buffer of `size` (the header only, or the whole frame). */
  #startPartial(size: number): boolean {
    const rest = this.#chunk.subarray(this.#pos);
    this.#partial = new Uint8Array(size);
    this.#partial.set(rest);
    this.#partialLen = rest.length;
    return this.#release();
  }

  /** The chunk is used up: drop it (and the last frame) so that an idle connection holds neither. */
  #release(): false {
    this.#chunk = this.payload = EMPTY;
    this.#pos = 0;
    return false;
  }

  #continuePartial(): boolean {
    const part = this.#partial!;
    const take = Math.min(part.length - this.#partialLen, this.#chunk.length - this.#pos);
    part.set(this.#chunk.subarray(this.#pos, this.#pos + take), this.#partialLen);
    this.#partialLen += take;
    this.#pos += take;
    if (this.#partialLen < part.length) return this.#release();
    if (part.length === FRAME_HEADER) {
      const len = (part[0] << 16) | (part[1] << 8) | part[2];
      if (len > this.maxFrameSize) {
        throw new FrameSizeError(`frame of ${len} octets over ${this.maxFrameSize}`);
      }
      if (len > 0) {
        const whole = new Uint8Array(FRAME_HEADER + len);
        whole.set(part);
        this.#partial = whole;
        return this.#continuePartial();
      }
    }
    this.#partial = null;
    this.#partialLen = 0;
    this.#header(part, 0);
    this.payload = part.subarray(FRAME_HEADER);
    return true;
  }
}
