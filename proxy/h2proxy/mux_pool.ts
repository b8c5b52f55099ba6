/**
 * Multiplexed HTTP/2 connections to one upstream (an endpoint's sidecar over mutual TLS, an
 * unproxied endpoint or the local application over h2c): streams share the open connections, and
 * another connection is opened only when each has as many streams as its peer allows
 * (SETTINGS_MAX_CONCURRENT_STREAMS), as Envoy's HTTP/2 connection pool does. Streams that arrive while
 * a connection is being made wait for it instead of each dialing its own. A connection that can take
 * no new stream (GOAWAY received, closed, stream ids used up) is left to finish its streams; one
 * without streams for `idleTimeoutMs` is closed.
 *
 * The pool only counts: the connection type says how many streams it has and allows
 * ({@link MuxConnection}), so it works with any HTTP/2 client connection.
 *
 * @module
 */

/** What the pool reads of a client connection. */
export interface MuxConnection {
  /** Streams open now (opened by this side and not yet closed). */
  readonly activeStreams: number;
  /** Whether a stream may be opened now (below the peer's SETTINGS_MAX_CONCURRENT_STREAMS, no GOAWAY). */
  readonly canOpenStream: boolean;
  /** Whether no stream will ever be opened on it again (GOAWAY either way, closed, stream ids used up). */
  readonly draining: boolean;
  /** Closes the connection (GOAWAY, then the socket). */
  close(): void;
}

/** Settings of a {@link MuxPool}. */
export interface MuxPoolOptions<C extends MuxConnection> {
  /**
   * Makes one connection (TCP, TLS with ALPN h2 and the peer check, the HTTP/2 preface sent).
   *
   * @throws when it cannot be made (the error is given to every stream that waited for it)
   */
  dial(): Promise<C>;
  /** Streams that may wait for a connection being made. Default 100 (what the peer will likely allow). */
  streamsPerDial?: number;
  /** A connection without streams is closed after this long (ms). Default 60 s. */
  idleTimeoutMs?: number;
  /** Called for each new connection (counters). */
  onConnect?: () => void;
}

interface Waiter<C> {
  open: (c: C) => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface Dialing<C> {
  waiters: Waiter<C>[];
}

/** The connections to one upstream. */
export class MuxPool<C extends MuxConnection> {
  readonly #o: MuxPoolOptions<C>;
  readonly #conns = new Set<C>();
  readonly #idleSince = new Map<C, number>();
  readonly #dialing = new Set<Dialing<C>>();
  #closed = false;
  /** Last time a stream was opened (ms), for dropping unused pools. */
  lastUsed = Date.now();

  constructor(options: MuxPoolOptions<C>) {
    this.#o = options;
  }

  /** Connections open now (usable or draining). */
  get connectionCount(): number {
    return this.#conns.size;
  }

  /** Connections open or being made. */
  get openCount(): number {
    return this.#conns.size + this.#dialing.size;
  }

  /**
   * Runs `open` with a connection that can take one more stream, synchronously when there is one,
   * else once a connection is made; `open` must open the stream before it returns (so that the
   * connection's stream count is right for the next caller).
   *
   * @returns what `open` returned
   * @throws what the dial threw, or an Error when the pool is closed
   */
  open<T>(open: (c: C) => T): Promise<T> {
    this.lastUsed = Date.now();
    if (this.#closed) return Promise.reject(new Error("upstream pool closed"));
    const c = this.#ready();
    if (c !== undefined) {
      try {
        return Promise.resolve(this.#use(c, open));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise<T>((resolve, reject) => {
      const w: Waiter<C> = { open, resolve: resolve as (v: unknown) => void, reject };
      const limit = this.#o.streamsPerDial ?? 100;
      for (const d of this.#dialing) {
        if (d.waiters.length < limit) {
          d.waiters.push(w);
          return;
        }
      }
      this.#dial([w]);
    });
  }

  #ready(): C | undefined {
    let best: C | undefined;
    for (const c of this.#conns) {
      if (c.draining) {
        if (c.activeStreams === 0) this.#drop(c);
        continue;
      }
      if (!c.canOpenStream) continue;
      // The busiest connection that still has room: idle ones are left to time out.
      if (best === undefined || c.activeStreams > best.activeStreams) best = c;
    }
    return best;
  }

  #use<T>(c: C, open: (c: C) => T): T {
    this.#idleSince.delete(c);
    return open(c);
  }

  #dial(waiters: Waiter<C>[]): void {
    const d: Dialing<C> = { waiters };
    this.#dialing.add(d);
    this.#o.dial().then(
      (c) => {
        try {
          this.#connected(d, c);
        } catch (e) {
          // A bug here must not become an unhandled rejection (the end of the process).
          this.#conns.delete(c);
          c.close();
          for (const w of d.waiters) w.reject(e);
        }
      },
      (e) => {
        this.#dialing.delete(d);
        for (const w of d.waiters) w.reject(e);
      },
    );
  }

  #connected(d: Dialing<C>, c: C): void {
    this.#dialing.delete(d);
    if (this.#closed) {
      c.close();
      for (const w of d.waiters) w.reject(new Error("upstream pool closed"));
      return;
    }
    this.#conns.add(c);
    this.#o.onConnect?.();
    const rest: Waiter<C>[] = [];
    for (const w of d.waiters) {
      if (c.canOpenStream) this.#run(c, w);
      else rest.push(w);
    }
    if (c.activeStreams === 0) this.#idleSince.set(c, Date.now());
    // The peer allows fewer streams than waited: place the rest elsewhere.
    for (const w of rest) this.open(w.open).then(w.resolve, w.reject);
  }

  #run(c: C, w: Waiter<C>): void {
    try {
      w.resolve(this.#use(c, w.open));
    } catch (e) {
      w.reject(e);
    }
  }

  #drop(c: C): void {
    this.#conns.delete(c);
    this.#idleSince.delete(c);
    c.close();
  }

  /** Closes connections idle for `idleTimeoutMs` and forgets the closed ones. */
  sweep(now: number): void {
    const idleMs = this.#o.idleTimeoutMs ?? 60_000;
    for (const c of [...this.#conns]) {
      if (c.activeStreams > 0) {
        this.#idleSince.delete(c);
        continue;
      }
      if (c.draining) {
        this.#drop(c);
        continue;
      }
      const since = this.#idleSince.get(c);
      if (since === undefined) this.#idleSince.set(c, now);
      else if (now - since >= idleMs) this.#drop(c);
    }
  }

  /** Closes every connection; streams waiting for a dial fail. */
  close(): void {
    this.#closed = true;
    for (const c of this.#conns) c.close();
    this.#conns.clear();
    this.#idleSince.clear();
  }
}
