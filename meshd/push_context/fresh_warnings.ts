/**
 * Push-context warnings (skipped gateway servers, AuthorizationPolicy rules that act otherwise on
 * TCP) are recomputed on every build; meshd logs each once, when it first appears, and again only
 * after it went away and came back (Istio logs them per push; once is enough to be seen).
 *
 * @module
 */

/** Remembers the last build's warnings of one kind. */
export class FreshWarnings {
  #last = new Set<string>();

  /**
   * The warnings of this build that the last build did not have, in their order.
   *
   * @param current this build's warnings
   */
  fresh(current: readonly string[]): string[] {
    const out = current.filter((w) => !this.#last.has(w));
    this.#last = new Set(current);
    return out;
  }
}
