/**
 * The chunked transfer coding (RFC 9112 section 7.1) as an incremental, allocation-free state
 * machine. The forwarder uses it to find where a chunked body ends while it copies the bytes through
 * unchanged; with `emitData` it also reports the data runs, to decode a body for an HTTP/1.0 client.
 *
 * Strict: a chunk size is hex digits only (no sign, no `0x`, no whitespace before the CRLF unless a
 * chunk extension follows), at most 2^53 - 1; extensions follow the grammar `*( BWS ";" BWS name
 * [ BWS "=" BWS ( token / quoted-string ) ] )`; every line ends in CRLF; trailer fields are checked
 * like header fields (no obsolete folding) and bounded in size.
 *
 * @module
 */
import { BACKSLASH, CR, DQUOTE, EQUALS, FIELD_VALUE, HEX, HT, LF, QDTEXT, SEMI, SP, TOKEN } from "./chars.ts";
import { HttpError } from "./http_head.ts";

// States, in this order: the size line (up to S_SIZE_LF), data, trailer section.
const S_SIZE_FIRST = 0;
const S_SIZE = 1;
const S_EXT_BWS_SEMI = 2;
const S_EXT_BWS_NAME = 3;
const S_EXT_NAME = 4;
const S_EXT_BWS_EQ = 5;
const S_EXT_BWS_VALUE = 6;
const S_EXT_TOKEN = 7;
const S_EXT_QUOTED = 8;
const S_EXT_QUOTED_ESC = 9;
const S_EXT_AFTER_QUOTED = 10;
const S_SIZE_LF = 11;
const S_DATA = 12;
const S_DATA_CR = 13;
const S_DATA_LF = 14;
const S_TRAILER_START = 15;
const S_TRAILER_NAME = 16;
const S_TRAILER_VALUE = 17;
const S_TRAILER_LF = 18;
const S_FINAL_LF = 19;
const S_DONE = 20;

/** {@link ChunkedDecoder.step} consumed everything it was given and needs more. */
export const CHUNK_NEED_MORE = 0;
/** {@link ChunkedDecoder.step} stopped after a run of data: `[dataStart, returned index)`. */
export const CHUNK_DATA = 1;
/** The body ended (last chunk and trailer section) at the returned index. */
export const CHUNK_DONE = 2;

/** Longest chunk-size line (size and extensions), as a bound against slow-drip abuse. */
const MAX_LINE = 4096;
const MAX_SAFE_DIV16 = Math.floor(Number.MAX_SAFE_INTEGER / 16);

/** Decoder of one chunked body at a time; {@link reset} it for the next. */
export class ChunkedDecoder {
  /** Set by {@link step} to CHUNK_NEED_MORE, CHUNK_DATA or CHUNK_DONE. */
  result = CHUNK_NEED_MORE;
  /** With CHUNK_DATA: where the data run starts. */
  dataStart = 0;
  #state = S_SIZE_FIRST;
  #size = 0;
  #line = 0;
  #trailer = 0;
  readonly #emitData: boolean;
  readonly #maxTrailer: number;
  readonly #bad: number;

  /**
   * @param emitData stop after each data run (decoding); otherwise only the end is reported
   * @param badStatus status of the HttpError thrown for a malformed body (400 request, 502 response)
   * @param maxTrailerBytes bound of the trailer section
   */
  constructor(emitData: boolean, badStatus = 400, maxTrailerBytes = 60 * 1024) {
    this.#emitData = emitData;
    this.#bad = badStatus;
    this.#maxTrailer = maxTrailerBytes;
  }

  /** Whether the body has ended. */
  get done(): boolean {
    return this.#state === S_DONE;
  }

  /** Whether the decoder is between chunks (nothing partial): for tests and diagnostics. */
  get atChunkBoundary(): boolean {
    return this.#state === S_SIZE_FIRST;
  }

  /** Prepares for the next body. */
  reset(): void {
    this.#state = S_SIZE_FIRST;
    this.#size = 0;
    this.#line = 0;
    this.#trailer = 0;
    this.result = CHUNK_NEED_MORE;
  }

  /**
   * Consumes `b[pos, end)`. Returns the index where it stopped; {@link result} says why.
   *
   * @throws {HttpError} on malformed framing
   */
  step(b: Uint8Array, pos: number, end: number): number {
    let i = pos;
    while (i < end) {
      let st = this.#state;
      if (st === S_DATA) {
        const avail = end - i;
        const n = this.#size < avail ? this.#size : avail;
        this.#size -= n;
        const s = i;
        i += n;
        if (this.#size === 0) this.#state = S_DATA_CR;
        if (this.#emitData) {
          this.dataStart = s;
          this.result = CHUNK_DATA;
          return i;
        }
        continue;
      }
      const c = b[i++];
      switch (st) {
        case S_SIZE_FIRST: {
          const h = HEX[c];
          if (h === 0) throw this.#error("invalid chunk size");
          this.#size = h - 1;
          this.#line = 1;
          st = S_SIZE;
          break;
        }
        case S_SIZE: {
          const h = HEX[c];
          if (h !== 0) {
            if (this.#size > MAX_SAFE_DIV16) throw this.#error("chunk size too large");
            this.#size = this.#size * 16 + (h - 1);
          } else if (c === CR) st = S_SIZE_LF;
          else if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c === SP || c === HT) st = S_EXT_BWS_SEMI;
          else throw this.#error("invalid chunk size");
          break;
        }
        case S_EXT_BWS_SEMI:
          if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c !== SP && c !== HT) throw this.#error("invalid chunk extension");
          break;
        case S_EXT_BWS_NAME:
          if (TOKEN[c] === 1) st = S_EXT_NAME;
          else if (c !== SP && c !== HT) throw this.#error("invalid chunk extension");
          break;
        case S_EXT_NAME:
          if (TOKEN[c] === 1) break;
          if (c === CR) st = S_SIZE_LF;
          else if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c === EQUALS) st = S_EXT_BWS_VALUE;
          else if (c === SP || c === HT) st = S_EXT_BWS_EQ;
          else throw this.#error("invalid chunk extension");
          break;
        case S_EXT_BWS_EQ:
          if (c === EQUALS) st = S_EXT_BWS_VALUE;
          else if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c !== SP && c !== HT) throw this.#error("invalid chunk extension");
          break;
        case S_EXT_BWS_VALUE:
          if (TOKEN[c] === 1) st = S_EXT_TOKEN;
          else if (c === DQUOTE) st = S_EXT_QUOTED;
          else if (c !== SP && c !== HT) throw this.#error("invalid chunk extension");
          break;
        case S_EXT_TOKEN:
          if (TOKEN[c] === 1) break;
          if (c === CR) st = S_SIZE_LF;
          else if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c === SP || c === HT) st = S_EXT_BWS_SEMI;
          else throw this.#error("invalid chunk extension");
          break;
        case S_EXT_QUOTED:
          if (c === DQUOTE) st = S_EXT_AFTER_QUOTED;
          else if (c === BACKSLASH) st = S_EXT_QUOTED_ESC;
          else if (QDTEXT[c] !== 1) throw this.#error("invalid chunk extension");
          break;
        case S_EXT_QUOTED_ESC:
          if (c !== HT && (c < 0x20 || c === 0x7f)) throw this.#error("invalid chunk extension");
          st = S_EXT_QUOTED;
          break;
        case S_EXT_AFTER_QUOTED:
          if (c === CR) st = S_SIZE_LF;
          else if (c === SEMI) st = S_EXT_BWS_NAME;
          else if (c === SP || c === HT) st = S_EXT_BWS_SEMI;
          else throw this.#error("invalid chunk extension");
          break;
        case S_SIZE_LF:
          if (c !== LF) throw this.#error("chunk size line not ended by CRLF");
          st = this.#size === 0 ? S_TRAILER_START : S_DATA;
          break;
        case S_DATA_CR:
          if (c !== CR) throw this.#error("chunk data not followed by CRLF");
          st = S_DATA_LF;
          break;
        case S_DATA_LF:
          if (c !== LF) throw this.#error("chunk data not followed by CRLF");
          st = S_SIZE_FIRST;
          break;
        case S_TRAILER_START:
          if (c === CR) st = S_FINAL_LF;
          else if (TOKEN[c] === 1) st = S_TRAILER_NAME;
          else if (c === SP || c === HT) throw this.#error("obsolete line folding in trailer");
          else throw this.#error("invalid trailer field");
          break;
        case S_TRAILER_NAME:
          if (c === 0x3a) st = S_TRAILER_VALUE;
          else if (TOKEN[c] !== 1) throw this.#error("invalid trailer field name");
          break;
        case S_TRAILER_VALUE:
          if (c === CR) st = S_TRAILER_LF;
          else if (FIELD_VALUE[c] !== 1) throw this.#error("invalid trailer field value");
          break;
        case S_TRAILER_LF:
          if (c !== LF) throw this.#error("trailer field not ended by CRLF");
          st = S_TRAILER_START;
          break;
        case S_FINAL_LF:
          if (c !== LF) throw this.#error("chunked body not ended by CRLF");
          this.#state = S_DONE;
          this.result = CHUNK_DONE;
          return i;
        default:
          throw this.#error("data after the end of a chunked body");
      }
      if (st <= S_SIZE_LF) {
        if (++this.#line > MAX_LINE) throw this.#error("chunk size line too long");
      } else if (st >= S_TRAILER_START && st <= S_TRAILER_LF) {
        if (++this.#trailer > this.#maxTrailer) throw this.#error("trailer section too large");
      }
      this.#state = st;
    }
    this.result = CHUNK_NEED_MORE;
    return i;
  }

  #error(message: string): HttpError {
    return new HttpError(this.#bad, message);
  }
}
