/**
 * Hex helpers for the codec's table tests (RFC examples are hex dumps).
 *
 * @module
 */

/** Octets of a hex dump ("8286 8441 ..."; whitespace ignored). */
export function hex(s: string): Uint8Array {
  const clean = s.replace(/\s+/g, "");
  return Uint8Array.from(clean.match(/../g) ?? [], (b) => parseInt(b, 16));
}

/** Lowercase hex of octets, no spaces. */
export function toHex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
