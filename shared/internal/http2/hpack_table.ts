/**
 * HPACK's indexing tables (RFC 7541 section 2.3): the static table and one dynamic table, a FIFO of
 * entries whose size (name + value + 32 octets each, section 4.1) is bounded by the current maximum;
 * inserting evicts from the oldest end (section 4.4).
 *
 * @module
 */
import { STATIC_TABLE } from "./hpack_data.ts";

/** Entries in the static table (61). */
export const STATIC_LENGTH: number = STATIC_TABLE.length;

/** The size of one entry (RFC 7541 section 4.1). */
export function entrySize(name: string, value: string): number {
  return name.length + value.length + 32;
}

/** A dynamic table. Index 0 is the newest entry (HPACK index 62). */
export class DynamicTable {
  #names: string[] = [];
  #values: string[] = [];
  /** Ring buffer: the oldest entry is at #head + #count - 1 (mod capacity). */
  #head = 0;
  #count = 0;
  #size = 0;
  #maxSize: number;

  constructor(maxSize: number) {
    this.#maxSize = maxSize;
  }

  /** Entries held. */
  get length(): number {
    return this.#count;
  }

  /** Current size in octets (section 4.1). */
  get size(): number {
    return this.#size;
  }

  /** Current maximum size in octets. */
  get maxSize(): number {
    return this.#maxSize;
  }

  /** Sets the maximum size, evicting as needed (section 4.3). */
  setMaxSize(max: number): void {
    this.#maxSize = max;
    this.#evict(0);
  }

  /** Name of the entry at dynamic index `i` (0 = newest). */
  name(i: number): string {
    return this.#names[this.#slot(i)];
  }

  /** Value of the entry at dynamic index `i`. */
  value(i: number): string {
    return this.#values[this.#slot(i)];
  }

  /** Adds an entry; an entry larger than the maximum empties the table (section 4.4). */
  add(name: string, value: string): void {
    const size = entrySize(name, value);
    this.#evict(size);
    if (size > this.#maxSize) return;
    const cap = this.#names.length;
    if (this.#count === cap) this.#grow();
    this.#head = (this.#head - 1 + this.#names.length) % this.#names.length;
    this.#names[this.#head] = name;
    this.#values[this.#head] = value;
    this.#count++;
    this.#size += size;
  }

  /** Dynamic index (0 = newest) of an entry with this name and value, or -1. */
  find(name: string, value: string): number {
    for (let i = 0; i < this.#count; i++) {
      const s = this.#slot(i);
      if (this.#names[s] === name && this.#values[s] === value) return i;
    }
    return -1;
  }

  /** Dynamic index (0 = newest) of an entry with this name, or -1. */
  findName(name: string): number {
    for (let i = 0; i < this.#count; i++) if (this.#names[this.#slot(i)] === name) return i;
    return -1;
  }

  #slot(i: number): number {
    return (this.#head + i) % this.#names.length;
  }

  #evict(room: number): void {
    while (this.#count > 0 && this.#size + room > this.#maxSize) {
      const s = this.#slot(this.#count - 1);
      this.#size -= entrySize(this.#names[s], this.#values[s]);
      this.#names[s] = this.#values[s] = "";
      this.#count--;
    }
  }

  #grow(): void {
    const names: string[] = [];
    const values: string[] = [];
    for (let i = 0; i < this.#count; i++) {
      names.push(this.name(i));
      values.push(this.value(i));
    }
    const cap = Math.max(16, this.#count * 2);
    for (let i = this.#count; i < cap; i++) names.push(""), values.push("");
    this.#names = names;
    this.#values = values;
    this.#head = 0;
  }
}
