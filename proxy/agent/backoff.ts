/**
 * Exponential backoff with jitter, for reconnecting to meshd and for retrying a failed CSR: the
 * base delay starts at `initialMs` and is multiplied by `multiplier` after every attempt up to
 * `maxMs`; each delay is then spread by ±`jitter` (a fraction of it, Istio's randomization factor 0.5
 * by default) so that many proxies losing meshd at once do not come back in lock step. The result
 * never exceeds `maxMs`.
 *
 * @module
 */

/** Options of {@link Backoff}. */
export interface BackoffOptions {
  /** First base delay, ms; default 100. */
  initialMs?: number;
  /** Largest delay, ms; default 30,000. */
  maxMs?: number;
  /** Growth per attempt; default 2. */
  multiplier?: number;
  /** Randomization factor in [0, 1]: a delay d becomes a value in [d(1-j), d(1+j)]; default 0.5. */
  jitter?: number;
  /** Random numbers in [0, 1); for tests. */
  random?: () => number;
}

/** A backoff sequence; {@link reset} after a success. */
export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #multiplier: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #attempt = 0;

  /** @param options delays and jitter; see {@link BackoffOptions} */
  constructor(options: BackoffOptions = {}) {
    this.#initial = options.initialMs ?? 100;
    this.#max = options.maxMs ?? 30_000;
    this.#multiplier = options.multiplier ?? 2;
    this.#jitter = options.jitter ?? 0.5;
    this.#random = options.random ?? Math.random;
    if (!(this.#initial > 0) || !(this.#max >= this.#initial)) {
      throw new RangeError(`backoff: need 0 < initialMs <= maxMs (got ${this.#initial}, ${this.#max})`);
    }
    if (!(this.#multiplier >= 1)) throw new RangeError(`backoff: multiplier must be >= 1`);
    if (!(this.#jitter >= 0 && this.#jitter <= 1)) throw new RangeError(`backoff: jitter must be in [0, 1]`);
  }

  /** Failed attempts since the last reset. */
  get attempts(): number {
    return this.#attempt;
  }

  /** The base (unjittered) delay of the next attempt, ms. */
  get baseMs(): number {
    return Math.min(this.#max, this.#initial * this.#multiplier ** this.#attempt);
  }

  /** The delay before the next attempt, ms; advances the sequence. */
  next(): number {
    const base = this.baseMs;
    this.#attempt++;
    const spread = base * this.#jitter * (2 * this.#random() - 1);
    return Math.max(0, Math.min(this.#max, Math.round(base + spread)));
  }

  /** Starts over from `initialMs`. */
  reset(): void {
    this.#attempt = 0;
  }
}
