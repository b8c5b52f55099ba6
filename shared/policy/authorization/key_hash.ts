/**
 * Numeric hashes of the index's keys (rule_keys.ts), computed over a string's UTF-16 code units
 * without copying it. The index looks rules up by these numbers, not by the strings: a Map lookup
 * by a string that the request has just produced (a path, a Host) costs V8 80 ns or more (measured
 * on Deno 2.9), hashing it here about 1 ns a character. Two keys may share a hash; the index then
 * offers both keys' rules, and each rule's matcher decides, so a collision costs time, never a
 * decision.
 *
 * FNV-1a (32 bits, offset basis 2166136261, prime 16777619), kept to 30 bits so that V8 stores
 * it as a small integer.
 *
 * @module
 */

/** The hash of nothing; extend it with {@link hashStep}. */
export const HASH_START = 0x811c9dc5 | 0;

/** The hash extended by one code unit. */
export function hashStep(h: number, code: number): number {
  return Math.imul(h ^ code, 0x01000193);
}

/** The final form of a hash, as the index's maps hold it. */
export function hashKey(h: number): number {
  return h & 0x3fffffff;
}

/** The running hash of `text[from, to)`, forwards (`hashKey` of it is the key). */
export function hashRange(text: string, from: number, to: number, h = HASH_START): number {
  for (let i = from; i < to; i++) h = hashStep(h, text.charCodeAt(i));
  return h;
}

/** The key of a whole string. */
export function hashText(text: string): number {
  return hashKey(hashRange(text, 0, text.length));
}

/** The key of a string read backwards (a suffix, as a path's end is walked). */
export function hashTextBackwards(text: string): number {
  let h = HASH_START;
  for (let i = text.length - 1; i >= 0; i--) h = hashStep(h, text.charCodeAt(i));
  return hashKey(h);
}

/**
 * The key of a string in lower case (a Host): ASCII letters folded on the fly; a string with any
 * other code unit is lower-cased first (as `toLowerCase`, which the host matcher applies).
 */
export function hashTextFolded(text: string): number {
  let h = HASH_START;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 127) return hashText(text.toLowerCase());
    h = hashStep(h, c >= 65 && c <= 90 ? c + 32 : c);
  }
  return hashKey(h);
}

/**
 * The key of a JWT principal: its subject and its issuer's length (an issuer URL is long and
 * shared by many rules, so hashing it would cost more than the candidates it rules out).
 */
export function hashPrincipal(issuer: string, subject: string): number {
  return hashKey(hashStep(hashRange(subject, 0, subject.length), issuer.length));
}
