/**
 * meshd's stdout and stderr. A cold sync logs thousands of lines (a `new connection` per proxy, as
 * Istio's `ads` scope does) and each was one write system call: 28 µs a line into a pipe, 5 % of
 * meshd's CPU while 10,000 proxies connect (meshd/README.md "Where meshd's CPU goes"). Here the first
 * text after a quiet moment is written at once, and what follows within the same turn of the event
 * loop waits for a zero-delay timer and leaves in one write: a line waits at most one turn. `flush`
 * writes what waits (meshd calls it before it exits and on an uncaught error).
 *
 * @module
 */

/** Where the text goes: Deno.stdout, Deno.stderr. */
export interface SyncSink {
  writeSync(p: Uint8Array): number;
}

const encoder = new TextEncoder();

/** See the module doc. */
export class BatchedOutput {
  readonly #sink: SyncSink;
  #pending = "";
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @param sink written with writeSync, whole (a pipe may take part of a buffer per call) */
  constructor(sink: SyncSink) {
    this.#sink = sink;
  }

  /** Writes `text` now, or with the next batch when the previous write was in this turn. */
  readonly write = (text: string): void => {
    if (this.#timer !== undefined) {
      this.#pending += text;
      return;
    }
    this.#writeNow(text);
    this.#open();
  };

  /** Writes what waits; the next text is written at once. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const text = this.#pending;
    this.#pending = "";
    if (text.length > 0) this.#writeNow(text);
  }

  /** A window of one turn in which text is batched; it stays open while text keeps coming. */
  #open(): void {
    const timer = setTimeout(this.#tick, 0);
    // Waiting text must not keep meshd alive: exit paths flush.
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  readonly #tick = (): void => {
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const text = this.#pending;
    this.#pending = "";
    this.#writeNow(text);
    this.#open();
  };

  #writeNow(text: string): void {
    const bytes = encoder.encode(text);
    for (let done = 0; done < bytes.length;) done += this.#sink.writeSync(bytes.subarray(done));
  }
}
