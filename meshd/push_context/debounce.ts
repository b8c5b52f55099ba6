/**
 * Debouncing of config and registry events before a push, as istiod's: a push starts once no event
 * came for `afterMs` (DISCO_DEBOUNCE_AFTER, default 100 ms), and at the latest `maxMs`
 * (DISCO_DEBOUNCE_MAX, default 10 s) after the first event of a burst, so a steady trickle of
 * changes cannot starve proxies.
 *
 * @module
 */

/** Options of {@link Debouncer}. */
export interface DebounceOptions {
  /** Quiet period after the last event, ms. */
  afterMs: number;
  /** Longest wait after the first event of a burst, ms. */
  maxMs: number;
  /**
   * Whether the last push is still fanning out (streams wait for their turn): the flush waits,
   * quiet period after quiet period, until it is not, or until `maxMs`. Istio's debounce likewise
   * starts no push before the last one is handed out. It spares push-context rebuilds that
   * connecting proxies trigger while first answers still queue (a cold sync of 10,000 in
   * tests/bench/meshd_scale: 22 rebuilds without, 18 with).
   */
  busy?: () => boolean;
}

/** How often a quiet but busy debouncer checks again, ms. */
const BUSY_RECHECK_MS = 20;

/** Merges bursts of events into one call of `flush` with every reason seen. */
export class Debouncer {
  readonly #flush: (reasons: Map<string, number>, firstEventAt: number) => void;
  readonly #options: DebounceOptions;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #firstAt = 0;
  #lastAt = 0;
  #reasons = new Map<string, number>();

  /**
   * @param flush called with each reason and its count, and when the burst began (ms since the epoch)
   * @param options the quiet period and the maximum wait
   */
  constructor(flush: (reasons: Map<string, number>, firstEventAt: number) => void, options: DebounceOptions) {
    this.#flush = flush;
    this.#options = options;
  }

  /** Records an event; `reason` labels disco_push_triggers. */
  trigger(reason: string): void {
    const now = Date.now();
    if (this.#reasons.size === 0) this.#firstAt = now;
    this.#lastAt = now;
    this.#reasons.set(reason, (this.#reasons.get(reason) ?? 0) + 1);
    if (this.#timer === undefined) this.#schedule(this.#options.afterMs);
  }

  #schedule(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), Math.max(0, ms));
  }

  #check(): void {
    this.#timer = undefined;
    const now = Date.now();
    const quietFor = now - this.#lastAt;
    const waited = now - this.#firstAt;
    const quiet = quietFor >= this.#options.afterMs && !this.#options.busy?.();
    if (quiet || waited >= this.#options.maxMs) {
      const reasons = this.#reasons;
      this.#reasons = new Map();
      this.#flush(reasons, this.#firstAt);
      return;
    }
    const untilQuiet = Math.max(this.#options.afterMs - quietFor, BUSY_RECHECK_MS);
    this.#schedule(Math.min(untilQuiet, this.#options.maxMs - waited));
  }

  /** Flushes pending events now (shutdown), or does nothing when none is pending. */
  flushNow(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#reasons.size === 0) return;
    const reasons = this.#reasons;
    this.#reasons = new Map();
    this.#flush(reasons, this.#firstAt);
  }

  /** Drops pending events and the timer. */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#reasons = new Map();
  }
}
