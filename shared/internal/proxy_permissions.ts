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

/**
 * The proxy's V8 flag: a young generation of 1 MiB (`--max-semi-space-size=1`, MiB). The read chunks of
 * Deno's node:net/node:tls (external ArrayBuffers) are freed only when V8 collects their wrappers, and a
 * relay allocates little JS heap per byte, so with V8's default young generation they piled up to 777 MiB
 * VmHWM in 30 s of iperf3; with 1 MiB the same load stays at 268 (proxy/tcp/README.md, "Memory and
 * backpressure"). deno.json's `proxy` and `compile:proxy` tasks and the proxy image's ENTRYPOINT spell out
 * the same flag.
 */
export const PROXY_V8_FLAGS = "--max-semi-space-size=1";

/** Every `deno run` flag of the proxy: {@link PROXY_PERMISSION_FLAGS} and `--v8-flags`. */
export const PROXY_RUN_FLAGS: readonly string[] = Object.freeze([
  ...PROXY_PERMISSION_FLAGS,
  `--v8-flags=${PROXY_V8_FLAGS}`,
]);
