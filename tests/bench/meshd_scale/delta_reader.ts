/**
 * Reads the DeltaDiscoveryResponses of one stream from its DATA chunks as they arrive, without
 * joining the chunks of a message that spans several: a cold sync's Service response (1,000
 * resources) comes in tens of 16 KiB frames per stream, and joining them was the simulated client's
 * largest cost after the per-chunk scans. A message that lies in one chunk is read in place
 * (wire.ts readDelta); one that spans chunks is walked field by field across the chunk boundaries,
 * resource bodies skipped, the type URL and nonce copied. Its chunks are kept as views, so that the
 * message can still be joined when it is asked for (an Authorization response, the probe's census).
 *
 * @module
 */
import { concat, type DeltaSummary, lengthAt, readDelta, typeIndex } from "./wire.ts";

/** Gets each response in order: its summary, and the whole message, joined on demand. */
export type OnResponse = (s: DeltaSummary, message: () => Uint8Array) => void;

const TAG = 0, LENGTH = 1, VARINT = 2, SKIP = 3, COPY = 4;
const EMPTY = new Uint8Array(0);
/** The tag of DeltaDiscoveryResponse.resources (field 2, length-delimited). */
const RESOURCE_TAG = (2 << 3) | 2;

/** The reader of one stream: gRPC framing (5-byte prefix) and the top-level fields of each response. */
export class DeltaReader {
  readonly #prefix = new Uint8Array(5);
  #prefixHave = 0;
  /** Octets of the current message's body still to come; -1 while reading a prefix. */
  #left = -1;
  #held: Uint8Array[] = [];
  #heldBytes = 0;
  // The walk over the current message's top-level fields.
  #state = TAG;
  #value = 0;
  #scale = 1;
  #field = 0;
  #skip = 0;
  #copy = EMPTY;
  #copyAt = 0;
  #resources = 0;
  #typeUrl = EMPTY;
  #nonce = EMPTY;

  /** Adds one chunk (kept as a view until its message ends); calls `each` per response it finishes. Throws on a malformed response. */
  push(chunk: Uint8Array, each: OnResponse): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#left < 0) {
        if (this.#prefixHave === 0 && chunk.length - at >= 5) {
          const len = lengthAt(chunk, at);
          if (chunk.length - at - 5 >= len) {
            const m = chunk.subarray(at + 5, at + 5 + len);
            each(readDelta(m), () => m);
            at += 5 + len;
            continue;
          }
        }
        this.#prefix[this.#prefixHave++] = chunk[at++];
        if (this.#prefixHave === 5) this.#start(lengthAt(this.#prefix, 0), each);
        continue;
      }
      const part = chunk.subarray(at, at + Math.min(this.#left, chunk.length - at));
      this.#held.push(part);
      this.#heldBytes += part.length;
      this.#walk(part);
      at += part.length;
      this.#left -= part.length;
      if (this.#left === 0) this.#finish(each);
    }
  }

  #start(length: number, each: OnResponse): void {
    this.#prefixHave = 0;
    this.#left = length;
    this.#state = TAG;
    this.#resources = 0;
    this.#typeUrl = this.#nonce = EMPTY;
    if (length === 0) this.#finish(each);
  }

  #finish(each: OnResponse): void {
    if (this.#state !== TAG || this.#scale !== 1) throw new Error("a response ends inside a field");
    const held = this.#held, bytes = this.#heldBytes;
    this.#held = [];
    this.#heldBytes = 0;
    this.#left = -1;
    const s: DeltaSummary = {
      type: typeIndex(this.#typeUrl),
      resources: this.#resources,
      typeUrl: this.#typeUrl,
      nonce: this.#nonce,
    };
    each(s, () => concat(held, bytes));
  }

  /** Advances the field walk over `b`, a part of the current message's body. */
  #walk(b: Uint8Array): void {
    let i = 0;
    while (i < b.length) {
      const state = this.#state;
      if (state === SKIP) {
        const k = Math.min(this.#skip, b.length - i);
        i += k;
        if ((this.#skip -= k) === 0) this.#state = TAG;
        continue;
      }
      if (state === COPY) {
        const k = Math.min(this.#copy.length - this.#copyAt, b.length - i);
        this.#copy.set(b.subarray(i, i + k), this.#copyAt);
        i += k;
        if ((this.#copyAt += k) === this.#copy.length) this.#state = TAG;
        continue;
      }
      const l0 = b[i + 1], l1 = b[i + 2];
      if (state === TAG && b[i] === RESOURCE_TAG && i + 3 <= b.length && (l0 < 0x80 || l1 < 0x80)) {
        // The common field read in place (most of a cold sync's walk): a resource whose length
        // takes one or two octets, counted and skipped.
        const len = l0 < 0x80 ? l0 : (l0 & 0x7f) | (l1 << 7);
        i += l0 < 0x80 ? 2 : 3;
        if (len > this.#left) throw new Error("field 2 runs past the end of the message");
        this.#resources++;
        const k = Math.min(len, b.length - i);
        i += k;
        if (k < len) this.#skipOrTag(len - k);
        continue;
      }
      const byte = b[i++];
      this.#value += (byte & 0x7f) * this.#scale;
      if (byte >= 0x80) {
        if ((this.#scale *= 128) > 2 ** 56) throw new Error("a varint longer than 8 octets");
        continue;
      }
      const v = this.#value;
      this.#value = 0;
      this.#scale = 1;
      if (state === TAG) this.#tag(v);
      else if (state === LENGTH) this.#length(v);
      else this.#state = TAG;
    }
  }

  #tag(tag: number): void {
    this.#field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 2) this.#state = LENGTH;
    else if (wire === 0) this.#state = VARINT;
    else if (wire === 1 || wire === 5) this.#skipOrTag(wire === 1 ? 8 : 4);
    else throw new Error(`wire type ${wire} not expected in DeltaDiscoveryResponse`);
  }

  #length(n: number): void {
    // A loose bound (the message's end is checked in #finish) against a huge allocation.
    if (n > this.#left) throw new Error(`field ${this.#field} runs past the end of the message`);
    if (this.#field === 2) this.#resources++;
    if (this.#field !== 4 && this.#field !== 5) return this.#skipOrTag(n);
    const bytes = new Uint8Array(n);
    if (this.#field === 4) this.#typeUrl = bytes;
    else this.#nonce = bytes;
    this.#copy = bytes;
    this.#copyAt = 0;
    this.#state = n === 0 ? TAG : COPY;
  }

  #skipOrTag(n: number): void {
    this.#skip = n;
    this.#state = n === 0 ? TAG : SKIP;
  }
}
