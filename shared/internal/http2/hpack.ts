/**
 * HPACK (RFC 7541): the header block encoder and the bounded decoder of one connection direction.
 *
 * Names and values are latin1 strings (one character per octet), as the HTTP/1.1 codec keeps them.
 * The decoder always decodes a whole block (so that its dynamic table stays in step with the peer's
 * encoder) but keeps at most `maxHeaders` fields and `maxListBytes` (name + value + 32 per field, the
 * measure of SETTINGS_MAX_HEADER_LIST_SIZE); beyond that it only sets {@link HpackDecoder.oversized}.
 * Anything malformed throws {@link HpackError}, a connection error COMPRESSION_ERROR (RFC 9113 4.3).
 *
 * @module
 */
import { huffmanDecode, huffmanEncode, HuffmanError, huffmanLength } from "./huffman.ts";
import { STATIC_TABLE } from "./hpack_data.ts";
import { DynamicTable, STATIC_LENGTH } from "./hpack_table.ts";
import type { HeaderList } from "./headers.ts";

/** A malformed header block: the connection error COMPRESSION_ERROR. */
export class HpackError extends Error {}

/** Largest integer the decoder accepts (a table index, a string length or a table size). */
const MAX_INT = 2 ** 31 - 1;

/** Bounded HPACK decoder (RFC 7541 sections 3, 4, 6). */
export class HpackDecoder {
  readonly #table: DynamicTable;
  /** SETTINGS_HEADER_TABLE_SIZE this side advertised: the most a size update may ask for. */
  #settingsMax: number;
  #maxHeaders: number;
  #maxListBytes: number;
  #pos = 0;
  /** Whether the last decoded block went over `maxHeaders` or `maxListBytes` (its extra fields dropped). */
  oversized = false;

  /** `tableSize`: the SETTINGS_HEADER_TABLE_SIZE this side advertises (octets). */
  constructor(tableSize: number, maxHeaders: number, maxListBytes: number) {
    this.#table = new DynamicTable(tableSize);
    this.#settingsMax = tableSize;
    this.#maxHeaders = maxHeaders;
    this.#maxListBytes = maxListBytes;
  }

  /** The dynamic table (for tests and metrics). */
  get table(): DynamicTable {
    return this.#table;
  }

  /** Decodes one complete header block. Throws {@link HpackError}. */
  decode(block: Uint8Array): HeaderList {
    const out: HeaderList = [];
    let listBytes = 0;
    let fieldSeen = false;
    this.oversized = false;
    this.#pos = 0;
    const end = block.length;
    while (this.#pos < end) {
      const b = block[this.#pos];
      let name: string;
      let value: string;
      if (b & 0x80) { // indexed field (6.1)
        const index = this.#int(block, 7);
        if (index === 0) throw new HpackError("HPACK: index 0");
        name = this.#name(index);
        value = this.#value(index);
      } else if ((b & 0xe0) === 0x20) { // dynamic table size update (6.3)
        if (fieldSeen) throw new HpackError("HPACK: table size update after a field");
        const size = this.#int(block, 5);
        if (size > this.#settingsMax) {
          throw new HpackError(
            `HPACK: table size update to ${size} over the advertised ${this.#settingsMax}`,
          );
        }
        this.#table.setMaxSize(size);
        continue;
      } else { // literal (6.2): with incremental indexing (01), without (0000) or never indexed (0001)
        const incremental = (b & 0xc0) === 0x40;
        const index = this.#int(block, incremental ? 6 : 4);
        name = index === 0 ? this.#string(block) : this.#name(index);
        value = this.#string(block);
        if (incremental) this.#table.add(name, value);
      }
      fieldSeen = true;
      listBytes += name.length + value.length + 32;
      if (out.length >= this.#maxHeaders || listBytes > this.#maxListBytes) this.oversized = true;
      else out.push([name, value]);
    }
    return out;
  }

  /** Changes what this side advertises; takes effect at the peer's next size update. */
  setSettingsTableSize(size: number): void {
    this.#settingsMax = size;
  }

  #int(src: Uint8Array, prefix: number): number {
    const mask = (1 << prefix) - 1;
    let v = src[this.#pos++] & mask;
    if (v < mask) return v;
    let shift = 0;
    for (;;) {
      if (this.#pos >= src.length) throw new HpackError("HPACK: truncated integer");
      const b = src[this.#pos++];
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (v > MAX_INT) throw new HpackError("HPACK: integer too large");
      if ((b & 0x80) === 0) return v;
    }
  }

  #string(src: Uint8Array): string {
    if (this.#pos >= src.length) throw new HpackError("HPACK: truncated string");
    const huffman = (src[this.#pos] & 0x80) !== 0;
    const len = this.#int(src, 7);
    const start = this.#pos;
    if (len > src.length - start) throw new HpackError("HPACK: string longer than the block");
    this.#pos += len;
    if (!huffman) return latin1(src, start, len);
    try {
      return huffmanDecode(src, start, len, Math.ceil(len * 8 / 5));
    } catch (e) {
      if (e instanceof HuffmanError) throw new HpackError(e.message);
      throw e;
    }
  }

  #name(index: number): string {
    if (index <= STATIC_LENGTH) return STATIC_TABLE[index - 1][0];
    const i = index - STATIC_LENGTH - 1;
    if (i >= this.#table.length) throw new HpackError(`HPACK: index ${index} out of range`);
    return this.#table.name(i);
  }

  #value(index: number): string {
    if (index <= STATIC_LENGTH) return STATIC_TABLE[index - 1][1];
    return this.#table.value(index - STATIC_LENGTH - 1);
  }
}

/** Octets as a latin1 string. */
export function latin1(src: Uint8Array, start: number, len: number): string {
  let s = "";
  for (let i = start; i < start + len; i += 4096) {
    s += String.fromCharCode.apply(
      null,
      src.subarray(i, Math.min(start + len, i + 4096)) as unknown as number[],
    );
  }
  return s;
}

/** Static table lookups: "name" to its first index, "name\0value" to its index. */
const STATIC_NAME = new Map<string, number>();
const STATIC_PAIR = new Map<string, number>();
for (let i = STATIC_TABLE.length - 1; i >= 0; i--) {
  STATIC_NAME.set(STATIC_TABLE[i][0], i + 1);
  STATIC_PAIR.set(STATIC_TABLE[i][0] + "\0" + STATIC_TABLE[i][1], i + 1);
}

/** Fields never indexed (RFC 7541 7.1.3: secrets an attacker could probe for through the table). */
const NEVER_INDEXED = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie"]);
/** Values longer than this are not indexed: they would evict everything else. */
const MAX_INDEXED_VALUE = 512;

/** HPACK encoder of one connection direction. */
export class HpackEncoder {
  readonly #table: DynamicTable;
  /** A size update owed at the start of the next block (-1: none). */
  #pendingSize = -1;
  #buf = new Uint8Array(1024);
  #pos = 0;

  /** `tableSize`: the dynamic table size to use (at most the peer's SETTINGS_HEADER_TABLE_SIZE). */
  constructor(tableSize = 4096) {
    this.#table = new DynamicTable(tableSize);
  }

  /** The peer's SETTINGS_HEADER_TABLE_SIZE changed: use min(size, 4096), announced in the next block. */
  setPeerTableSize(size: number): void {
    const use = Math.min(size, 4096);
    if (use === this.#table.maxSize && this.#pendingSize < 0) return;
    this.#table.setMaxSize(use);
    this.#pendingSize = use;
  }

  /**
   * Encodes a header list into a new block, after `reserve` zero octets left for the caller (a frame
   * header, so that a block that fits one frame is not copied again). Throws a TypeError for
   * non-latin1 characters.
   */
  encode(headers: HeaderList, reserve = 0): Uint8Array {
    this.#pos = 0;
    this.#ensure(reserve);
    this.#buf.fill(0, 0, reserve);
    this.#pos = reserve;
    if (this.#pendingSize >= 0) {
      this.#int(this.#pendingSize, 5, 0x20);
      this.#pendingSize = -1;
    }
    for (let i = 0; i < headers.length; i++) this.#field(headers[i][0], headers[i][1]);
    return this.#buf.slice(0, this.#pos);
  }

  #field(name: string, value: string): void {
    const pair = STATIC_PAIR.get(name + "\0" + value);
    if (pair !== undefined) return this.#int(pair, 7, 0x80);
    const dyn = this.#table.find(name, value);
    if (dyn >= 0) return this.#int(dyn + STATIC_LENGTH + 1, 7, 0x80);
    const never = NEVER_INDEXED.has(name);
    const index = !never && value.length <= MAX_INDEXED_VALUE;
    let nameIndex = STATIC_NAME.get(name) ?? 0;
    if (nameIndex === 0) {
      const d = this.#table.findName(name);
      if (d >= 0) nameIndex = d + STATIC_LENGTH + 1;
    }
    if (index) this.#int(nameIndex, 6, 0x40);
    else this.#int(nameIndex, 4, never ? 0x10 : 0);
    if (nameIndex === 0) this.#string(name);
    this.#string(value);
    if (index) this.#table.add(name, value);
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#pos + n));
    grown.set(this.#buf.subarray(0, this.#pos));
    this.#buf = grown;
  }

  #int(v: number, prefix: number, flags: number): void {
    this.#ensure(6);
    const max = (1 << prefix) - 1;
    if (v < max) {
      this.#buf[this.#pos++] = flags | v;
      return;
    }
    this.#buf[this.#pos++] = flags | max;
    v -= max;
    while (v >= 0x80) {
      this.#buf[this.#pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.#buf[this.#pos++] = v;
  }

  #string(s: string): void {
    const h = huffmanLength(s);
    if (h <= s.length) {
      this.#int(h, 7, 0x80);
      this.#ensure(h);
      this.#pos = huffmanEncode(s, this.#buf, this.#pos);
      return;
    }
    this.#int(s.length, 7, 0);
    this.#ensure(s.length);
    for (let i = 0; i < s.length; i++) this.#buf[this.#pos++] = s.charCodeAt(i);
  }
}
