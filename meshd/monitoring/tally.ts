/**
 * Histograms and counters that take observations on meshd's push path at the cost of a few
 * additions: a {@link Tally} keeps its own bucket counts, sum and count, and the prom-client metric
 * it belongs to adds them to what it exports on every scrape. prom-client's own `observe` and `inc`
 * build a label hash string, validate the labels and convert the bucket bound to a property name per
 * call (about a microsecond each; four observations per pushed stream and change at 10,000 streams:
 * meshd/README.md "Where meshd's CPU goes"). The exported text is what prom-client would print for the
 * same observations: the same names, labels, buckets, sums and counts, in the same order. Two limits,
 * neither reached by meshd, which never resets or removes these series: after `reset()` series observed
 * again only through their tallies come back in the order they were first created (prom-client: the
 * order of the new observations), and `remove(labels)` is refused (the tally would bring the series back).
 *
 * @module
 */
import client from "prom-client";

/** Observations of one label set, kept outside prom-client until a scrape reads them. */
export class Tally {
  readonly labels: Readonly<Record<string, string>>;
  readonly #bounds: readonly number[];
  /** Per upper bound, not cumulative; observations above the last bound count only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Readonly<Record<string, string>>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  /**
   * One observation (a histogram's value; a counter's increment).
   *
   * @throws TypeError for a value that is not a finite number, as prom-client's observe does
   */
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** One exported sample, as prom-client's metrics hand them to its registry. */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string | number>;
  value: number;
  metricName?: string;
  exemplar?: unknown;
}

function sameLabels(
  a: Readonly<Record<string, string | number>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const keys = Object.keys(b);
  if (Object.keys(a).length !== keys.length) return false;
  return keys.every((k) => String(a[k]) === b[k]);
}

/** A label set's key in the tallies map: its values in label-name order. */
function keyOf(labelNames: readonly string[], labels: Readonly<Record<string, string>>): string {
  return labelNames.map((n) => labels[n] ?? "").join("\u0000");
}

/** The labels given, of the metric's names only, frozen (a tally's own copy). */
function ownLabels(
  labelNames: readonly string[],
  labels: Readonly<Record<string, string>>,
): Record<string, string> {
  const own: Record<string, string> = {};
  for (const n of labelNames) if (labels[n] !== undefined) own[n] = labels[n];
  return Object.freeze(own);
}

/** A prom-client histogram whose label sets also take observations through a {@link Tally}. */
export class TalliedHistogram<L extends string = string> extends client.Histogram<L> {
  readonly #tallies = new Map<string, Tally>();
  readonly #names: readonly string[];
  readonly #bounds: readonly number[];

  readonly #name: string;

  /** @param config as prom-client's, with the buckets given (the tallies count into the same ones) */
  constructor(config: client.HistogramConfiguration<L> & { buckets: number[] }) {
    super(config);
    this.#name = config.name;
    this.#names = [...(config.labelNames ?? [])];
    this.#bounds = [...config.buckets];
    // prom-client's get() and its registry's text both read getForPromString (not in its typings):
    // the tallies are added to the samples it returns, a fresh array per scrape.
    const self = this as unknown as { getForPromString(): Promise<{ values: Sample[] }> };
    const base = self.getForPromString.bind(this);
    self.getForPromString = async () => {
      const data = await base();
      this.#withTallies(data.values);
      return data;
    };
  }

  /**
   * The tally of one label set (created on first use, and its series with it, where prom-client
   * creates it on a first observation).
   *
   * @throws Error for labels this histogram does not have, as prom-client's `labels` does
   */
  tally(labels: Partial<Record<L, string>> = {}): Tally {
    const key = keyOf(this.#names, labels as Record<string, string>);
    let t = this.#tallies.get(key);
    if (t === undefined) {
      this.labels(labels as client.LabelValues<L>); // validates them
      const own = ownLabels(this.#names, labels as Record<string, string>);
      if (this.#names.length > 0) this.zero(own as client.LabelValues<L>);
      t = new Tally(own, this.#bounds);
      this.#tallies.set(key, t);
    }
    return t;
  }

  /** @throws Error always: a tallied series cannot be removed (its tally would export it again). */
  override remove(..._labels: unknown[]): void {
    throw new Error("a tallied metric's series cannot be removed");
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets before this class's fields exist.
    if (!(#tallies in this)) return;
    for (const t of this.#tallies.values()) t.clear();
  }

  /** prom-client's samples with the tallies added. */
  #withTallies(values: Sample[]): void {
    for (const t of this.#tallies.values()) {
      if (t.count === 0) continue;
      const own = values.filter((v) => sameLabels(v.sharedLabels ?? {}, t.labels));
      if (own.length === 0) values.push(...this.#samples(t));
      else this.#add(own, t);
    }
  }

  #add(own: Sample[], t: Tally): void {
    let acc = 0;
    let b = 0;
    for (const s of own) {
      if (s.metricName === `${this.#name}_sum`) s.value += t.sum;
      else if (s.metricName === `${this.#name}_count` || s.labels.le === "+Inf") s.value += t.count;
      else if (s.metricName === `${this.#name}_bucket`) {
        acc += t.counts[b++];
        s.value += acc;
      }
    }
  }

  /** The samples prom-client would export for a label set that only the tally observed. */
  #samples(t: Tally): Sample[] {
    const out: Sample[] = [];
    let acc = 0;
    this.#bounds.forEach((le, i) => {
      acc += t.counts[i];
      out.push({
        labels: { le },
        sharedLabels: t.labels,
        value: acc,
        metricName: `${this.#name}_bucket`,
        exemplar: null,
      });
    });
    out.push(
      {
        labels: { le: "+Inf" },
        sharedLabels: t.labels,
        value: t.count,
        metricName: `${this.#name}_bucket`,
        exemplar: null,
      },
      {
        labels: {},
        sharedLabels: t.labels,
        value: t.sum,
        metricName: `${this.#name}_sum`,
        exemplar: undefined,
      },
      {
        labels: {},
        sharedLabels: t.labels,
        value: t.count,
        metricName: `${this.#name}_count`,
        exemplar: undefined,
      },
    );
    return out;
  }
}

/** A prom-client counter whose label sets also take increments through a {@link Tally}. */
export class TalliedCounter<L extends string = string> extends client.Counter<L> {
  readonly #tallies = new Map<string, Tally>();
  readonly #names: readonly string[];

  constructor(config: client.CounterConfiguration<L>) {
    super(config);
    this.#names = [...(config.labelNames ?? [])];
  }

  /**
   * The tally of one label set; `observe(n)` adds n (a counter's inc).
   *
   * @throws Error for labels this counter does not have, as prom-client's `labels` does
   */
  tally(labels: Partial<Record<L, string>> = {}): Tally {
    const key = keyOf(this.#names, labels as Record<string, string>);
    let t = this.#tallies.get(key);
    if (t === undefined) {
      this.labels(labels as client.LabelValues<L>);
      const own = ownLabels(this.#names, labels as Record<string, string>);
      this.inc(own as client.LabelValues<L>, 0);
      t = new Tally(own, []);
      this.#tallies.set(key, t);
    }
    return t;
  }

  /** @throws Error always: a tallied series cannot be removed (its tally would export it again). */
  override remove(..._labels: unknown[]): void {
    throw new Error("a tallied metric's series cannot be removed");
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets before this class's fields exist.
    if (!(#tallies in this)) return;
    for (const t of this.#tallies.values()) t.clear();
  }

  /** prom-client's samples (copied: they are its live state) with the tallies added. */
  override async get(): Promise<client.MetricObjectWithValues<client.MetricValue<L>>> {
    const data = await super.get();
    const values = (data.values as unknown as Sample[]).map((v) => ({ ...v }));
    for (const t of this.#tallies.values()) {
      if (t.count === 0) continue;
      const own = values.find((v) => sameLabels(v.labels, t.labels));
      if (own) own.value += t.sum;
      else values.push({ value: t.sum, labels: { ...t.labels } });
    }
    return { ...data, values: values as unknown as client.MetricValue<L>[] };
  }
}
