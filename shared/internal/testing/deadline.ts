/**
 * A deadline for a test's wait on an event of the code under test (a socket closed, a stream ended, a
 * handshake done), so that a regression fails the test with what was awaited instead of hanging the run.
 *
 * @module
 */

/**
 * Resolves or rejects as `promise` does, if it settles within `ms` milliseconds.
 *
 * @throws Error "<what>: not within <ms> ms" when it does not (`promise` is left to settle unobserved)
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A deadline for a child process: pass `signal` to `Deno.Command`, call `end()` once it has exited. */
export interface ProcessDeadline {
  /** Aborted after the time: Deno then kills the process (SIGTERM). */
  signal: AbortSignal;
  /**
   * Clears the timer.
   *
   * @throws Error "<what>: not within <ms> ms (killed)" when the time ran out first
   */
  end(): void;
}

/** A deadline of `ms` milliseconds for the process that runs `what` (named in the error). */
export function processDeadline(ms: number, what: string): ProcessDeadline {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ms);
  return {
    signal: abort.signal,
    end(): void {
      clearTimeout(timer);
      if (abort.signal.aborted) throw new Error(`${what}: not within ${ms} ms (killed)`);
    },
  };
}
