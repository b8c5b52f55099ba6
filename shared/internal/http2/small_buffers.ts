/**
 * Small buffers (DATA frame headers, a gRPC message's prefix and nonce field) cut from a shared 4 KiB
 * block instead of one ArrayBuffer each: creating an ArrayBuffer costs V8 about half a microsecond and
 * the garbage collector more, and meshd's cold sync of 10,000 proxies made a few hundred thousand of
 * them (meshd/README.md "Where meshd's CPU goes"). A block is never reused: a buffer is a view no other
 * view overlaps, and a block lives as long as its longest-lived view (at most 4 KiB kept for a buffer
 * of a stalled stream).
 *
 * @module
 */

/** Octets of a block. */
const BLOCK_BYTES = 4096;
/** Larger buffers get their own ArrayBuffer. */
const MAX_SMALL = 256;

let block = new Uint8Array(BLOCK_BYTES);
let used = 0;

/** A zero-filled buffer of `n` octets, a view of a shared block when small (≤ 256 octets). */
export function smallBuffer(n: number): Uint8Array {
  if (n > MAX_SMALL) return new Uint8Array(n);
  if (used + n > BLOCK_BYTES) {
    block = new Uint8Array(BLOCK_BYTES);
    used = 0;
  }
  const out = block.subarray(used, used + n);
  used += n;
  return out;
}
