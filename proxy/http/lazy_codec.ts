/**
 * A listener's codec loaded with its first connection. A data-path isolate whose connections are all
 * HTTP/1.1 then never compiles the HTTP/2 codec and relay (../http2, ../h2proxy: 23 modules, about 150
 * KB of TypeScript; measured in ../workers/README.md "Lazy HTTP/2"). The importer passes a function
 * with a static `import("...")`, so that Deno still resolves the module with the graph (a Worker
 * without read permission can load it; `deno compile` includes it).
 *
 * The caller pauses the connection before {@link LazyCodec.use}, so that the bytes it has read (put
 * back with `unshift`) wait for the codec.
 *
 * @module
 */

/** What a listener calls on its codec besides serving: the idle sweep and closing. */
export interface ListenerCodec {
  sweep(now: number): void;
  close(): void;
}

/** One listener's codec, built by `load` with the first {@link use}. */
export class LazyCodec<T extends ListenerCodec> {
  readonly #load: () => Promise<T>;
  #codec: T | undefined;
  #loading: Promise<T> | undefined;
  #closed = false;

  /** `load` imports the codec's module and builds it; it is called once (again only after a failure). */
  constructor(load: () => Promise<T>) {
    this.#load = load;
  }

  /** The codec once loaded, else undefined. */
  get loaded(): T | undefined {
    return this.#codec;
  }

  /**
   * Calls `use` with the codec: at once when it is loaded, else once it is. Calls `failed` instead
   * when the load fails or the listener closed meanwhile (the caller then closes the connection).
   */
  use(use: (codec: T) => void, failed: (error: unknown) => void): void {
    if (this.#codec !== undefined) return use(this.#codec);
    if (this.#closed) return failed(new Error("listener closed"));
    this.#loading ??= this.#load().then((codec) => {
      if (this.#closed) codec.close();
      else this.#codec = codec;
      return codec;
    }, (error) => {
      this.#loading = undefined;
      throw error;
    });
    this.#loading.then((codec) => this.#closed ? failed(new Error("listener closed")) : use(codec), failed);
  }

  /** Sweeps the codec's idle connections, when it is loaded. */
  sweep(now: number): void {
    this.#codec?.sweep(now);
  }

  /** Closes the codec when it is loaded, and one that is still loading once it is. */
  close(): void {
    this.#closed = true;
    this.#codec?.close();
  }
}
