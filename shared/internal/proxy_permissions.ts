/**
 * The Deno permissions the proxy runs with, for whoever starts it (`lab up`, the lab's Kubernetes
 * node, the benchmarks): read, env, net and sys, and FFI narrowed to libc, through which transparent
 * capture reads SO_ORIGINAL_DST (proxy/capture/README.md). deno.json's `proxy` and `compile:proxy`
 * tasks and the proxy image's ENTRYPOINT spell out the same flags (for amd64).
 *
 * @module
 */

/** glibc's shared object on Debian's multiarch layout for this machine's architecture. */
export const LIBC_PATH = `/lib/${Deno.build.arch}-linux-gnu/libc.so.6`;

/** `--allow-ffi` for libc only: Deno checks the literal path (an alias such as /usr/lib/... is refused). */
export const PROXY_FFI_FLAG = `--allow-ffi=${LIBC_PATH}`;

/** `deno run` flags of the proxy. */
export const PROXY_PERMISSION_FLAGS: readonly string[] = Object.freeze([
  "--allow-read",
  "--allow-env",
  "--allow-net",
  "--allow-sys",
  PROXY_FFI_FLAG,
]);
