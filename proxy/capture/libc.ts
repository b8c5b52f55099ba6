/**
 * The libc calls capture needs (getsockopt, getsockname, getpeername, close, errno), through Deno FFI.
 * The library is opened by its absolute path so that the proxy's permission can name that one file
 * (`--allow-ffi=/lib/x86_64-linux-gnu/libc.so.6`, {@link LIBC_PATH}); Deno checks the literal path,
 * so a symlinked alias of the same file is refused.
 *
 * @module
 */

import { LIBC_PATH, PROXY_FFI_FLAG } from "../../shared/internal/proxy_permissions.ts";

export { LIBC_PATH };

/** The `--allow-ffi` flag the proxy is started with. */
export const ALLOW_FFI_FLAG = PROXY_FFI_FLAG;

const SYMBOLS = {
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
  // Reads errno into a buffer: Deno.UnsafePointerView needs --allow-ffi for every library, not one path.
  memcpy: { parameters: ["buffer", "pointer", "usize"], result: "pointer" },
} as const;

/** The opened library. */
export type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** The library, or why it cannot be used (permission not granted, not Linux, no such file). */
export type LibcResult = { ok: true; libc: Libc; errno: () => number } | { ok: false; reason: string };

/**
 * libc, opened once per thread (each worker has its own) when this module is loaded: it stays open
 * for the life of the thread, and a test's resource sanitizer sees it as there before the test.
 * Never prompts: without the permission the result says so.
 */
const opened: LibcResult = open();

/** The library opened when this module was loaded, or why it is not usable. */
export function openLibc(): LibcResult {
  return opened;
}

function open(): LibcResult {
  if (Deno.build.os !== "linux") {
    return { ok: false, reason: `SO_ORIGINAL_DST is Linux only (this is ${Deno.build.os})` };
  }
  const state = Deno.permissions.querySync({ name: "ffi", path: LIBC_PATH }).state;
  if (state !== "granted") {
    return { ok: false, reason: `no FFI permission for ${LIBC_PATH} (run with ${ALLOW_FFI_FLAG})` };
  }
  try {
    const lib = Deno.dlopen(LIBC_PATH, SYMBOLS);
    // errno is per thread; FFI calls run on this module's (the worker's) JS thread.
    const at = lib.symbols.__errno_location();
    if (at === null) return { ok: false, reason: "__errno_location returned NULL" };
    const value = new Int32Array(1);
    const bytes = new Uint8Array(value.buffer);
    const errno = () => {
      lib.symbols.memcpy(bytes, at, 4n);
      return value[0];
    };
    return { ok: true, libc: lib.symbols, errno };
  } catch (e) {
    return { ok: false, reason: `cannot open ${LIBC_PATH}: ${(e as Error).message}` };
  }
}
