/**
 * Frees the byte buffers meshd's ADS streams leave behind. Every response written to a stream passes
 * through several short-lived buffers (the encoded response, grpc-js's framed copy, Deno's HTTP/2
 * frames) whose memory is outside V8's heap; V8 frees it only when it collects the buffer objects,
 * and during a cold sync of 10,000 proxies it let about 577 MiB of them wait (meshd README "Memory",
 * tests/bench/meshd_scale). This checks V8's external memory every {@link CHECK_MS} and runs a full
 * collection when it is above {@link THRESHOLD_BYTES}, at most {@link MAX_SHARE} of the time: after a
 * collection that took d ms, the next waits at least d / MAX_SHARE ms (a full collection of a 10,000
 * proxy heap takes a few hundred ms).
 *
 * Freed, that memory stays with glibc's allocator (a 10,000-proxy cold sync left it holding about 800
 * MiB of free pages), so each collection is followed by glibc's `malloc_trim(0)`, which returns free pages
 * to the system; it needs `--allow-ffi` on libc (deno.json's `meshd` task) and is skipped without it.
 *
 * The collector is reached through node:v8's `--expose-gc` and a node:vm context, as in Node; when the
 * runtime does not give it, {@link startBufferCollector} returns undefined and nothing runs.
 *
 * @module
 */
import v8 from "node:v8";
import vm from "node:vm";
import { LIBC_PATH } from "../../shared/internal/proxy_permissions.ts";

/** External memory (bytes) above which a collection runs. */
export const THRESHOLD_BYTES = 192 * 1024 * 1024;
/** How often the external memory is read, ms. */
export const CHECK_MS = 500;
/** The largest share of meshd's time the collections may take. */
export const MAX_SHARE = 0.1;
/** While meshd is busy (a push fanning out), the threshold is this many times higher. */
export const BUSY_FACTOR = 4;

/** A running collector. */
export interface BufferCollector {
  /** Collections run so far. */
  readonly collections: number;
  /** Whether free memory goes back to the system after each (libc's malloc_trim, with --allow-ffi). */
  readonly trims: boolean;
  stop(): void;
}

/** V8's full garbage collection, or undefined when the runtime does not expose it. */
export function exposedGc(): (() => void) | undefined {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    return typeof gc === "function" ? () => gc() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts checking V8's external memory every `checkMs`; above `thresholdBytes` (times
 * {@link BUSY_FACTOR} while `busy()`: a collection then delays the push's proxies) it runs a full
 * collection. The timer does not keep the process alive.
 *
 * @returns the collector, or undefined when no garbage collection function is available
 */
export function startBufferCollector(
  options: { thresholdBytes?: number; checkMs?: number; busy?: () => boolean } = {},
): BufferCollector | undefined {
  const gc = exposedGc();
  if (gc === undefined) return undefined;
  const threshold = options.thresholdBytes ?? THRESHOLD_BYTES;
  const trim = mallocTrim();
  let collections = 0;
  let notBefore = 0;
  const timer = setInterval(() => {
    const started = performance.now();
    if (started < notBefore) return;
    const limit = options.busy?.() ? threshold * BUSY_FACTOR : threshold;
    if (v8.getHeapStatistics().external_memory <= limit) return;
    gc();
    trim?.();
    collections++;
    notBefore = started + (performance.now() - started) / MAX_SHARE;
  }, options.checkMs ?? CHECK_MS);
  Deno.unrefTimer(timer);
  return {
    get collections() {
      return collections;
    },
    trims: trim !== undefined,
    stop: () => {
      clearInterval(timer);
      trim?.close();
    },
  };
}

/** glibc's malloc_trim(0), when FFI on libc is allowed; undefined otherwise. */
function mallocTrim(): (() => void) & { close(): void } | undefined {
  if (Deno.permissions.querySync({ name: "ffi", path: LIBC_PATH }).state !== "granted") return undefined;
  try {
    const libc = Deno.dlopen(LIBC_PATH, { malloc_trim: { parameters: ["usize"], result: "i32" } });
    return Object.assign(() => void libc.symbols.malloc_trim(0n), { close: () => libc.close() });
  } catch {
    return undefined;
  }
}
