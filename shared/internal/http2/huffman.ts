/**
 * HPACK's Huffman code (RFC 7541 section 5.2, Appendix B): encoding of latin1 strings and a bounded
 * decoder that rejects what section 5.2 calls a decoding error (padding longer than 7 bits, padding
 * that is not the most significant bits of EOS, an EOS symbol in the string).
 *
 * @module
 */
import { HUFFMAN_CODES, HUFFMAN_LENGTHS } from "./hpack_data.ts";

/** A malformed Huffman string: the connection error COMPRESSION_ERROR (RFC 9113 section 4.3). */
export class HuffmanError extends Error {}

/** Decoding tree: node i has children at [2i] (bit 0) and [2i+1] (bit 1); a leaf is ~symbol (negative). */
const TREE = buildTree();

function buildTree(): Int32Array {
  const tree = new Int32Array(2 * 512);
  let next = 1;
  for (let sym = 0; sym <= 256; sym++) {
    const code = HUFFMAN_CODES[sym];
    const len = HUFFMAN_LENGTHS[sym];
    let node = 0;
    for (let i = len - 1; i > 0; i--) {
      const slot = 2 * node + ((code >>> i) & 1);
      if (tree[slot] === 0) tree[slot] = next++;
      node = tree[slot];
    }
    tree[2 * node + (code & 1)] = ~sym;
  }
  return tree;
}

/** Bytes the Huffman encoding of `s` takes. Throws a TypeError for a character above U+00FF. */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) throw new TypeError(`HPACK: header character U+${c.toString(16)} is not latin1`);
    bits += HUFFMAN_LENGTHS[c];
  }
  return (bits + 7) >> 3;
}

/** Writes the Huffman encoding of `s` (latin1) into `out` at `pos`; returns the end position. */
export function huffmanEncode(s: string, out: Uint8Array, pos: number): number {
  let acc = 0; // pending bits, right-aligned; at most 7 + 30 bits are pending, so a float keeps them exact
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const len = HUFFMAN_LENGTHS[c];
    acc = acc * (1 << len) + HUFFMAN_CODES[c];
    n += len;
    while (n >= 8) {
      n -= 8;
      const byte = Math.floor(acc / 2 ** n);
      out[pos++] = byte;
      acc -= byte * 2 ** n;
    }
  }
  if (n > 0) out[pos++] = (acc << (8 - n)) | (0xff >> n);
  return pos;
}

/**
 * Decodes `len` bytes at `pos` of `src` into a latin1 string of at most `maxChars` characters.
 * Throws {@link HuffmanError} on a malformed string or one longer than `maxChars`.
 */
export function huffmanDecode(src: Uint8Array, pos: number, len: number, maxChars: number): string {
  const end = pos + len;
  let node = 0;
  let depth = 0; // bits since the last symbol
  let ones = true; // whether those bits are all 1 (a valid EOS prefix)
  let s = "";
  for (let p = pos; p < end; p++) {
    const byte = src[p];
    for (let b = 7; b >= 0; b--) {
      const bit = (byte >> b) & 1;
      const next = TREE[2 * node + bit];
      if (next < 0) {
        const sym = ~next;
        if (sym === 256) throw new HuffmanError("HPACK: EOS symbol in a Huffman string");
        if (s.length >= maxChars) throw new HuffmanError("HPACK: Huffman string longer than the limit");
        s += String.fromCharCode(sym);
        node = 0;
        depth = 0;
        ones = true;
      } else {
        node = next;
        depth++;
        if (bit === 0) ones = false;
      }
    }
  }
  if (depth > 7) throw new HuffmanError("HPACK: Huffman padding longer than 7 bits");
  if (!ones) throw new HuffmanError("HPACK: Huffman padding is not the EOS prefix");
  return s;
}
