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
 * The proxy's V8 flags. A young generation of 1 MiB (`--max-semi-space-size=1`, MiB): the read chunks of
 * Deno's node:net/node:tls (external ArrayBuffers) are freed only when V8 collects their wrappers, and a
 * relay allocates little JS heap per byte, so with V8's default young generation they piled up to 777 MiB
 * VmHWM in 30 s of iperf3; with 1 MiB the same load stays at 268 (proxy/tcp/README.md, "Memory and
 * backpressure"). No allocation-site pretenuring (`--no-allocation-site-pretenuring`): with so small a
 * young generation a request's objects often outlive two scavenges, V8 then allocates their sites
 * straight in the old generation, and under load the old generation filled with dead requests (19 to
 * 29-45 MiB) until a full GC, in about half the proxies of a bench run (proxy/workers/README.md, "The
 * old generation's step"). deno.json's `proxy` and `compile:proxy` tasks and the proxy image's ENTRYPOINT
 * spell out the same flags.
 */
export const PROXY_V8_FLAGS = "--max-semi-space-size=1,--no-allocation-site-pretenuring";

/** Every `deno run` flag of the proxy: {@link PROXY_PERMISSION_FLAGS} and `--v8-flags`. */
export const PROXY_RUN_FLAGS: readonly string[] = Object.freeze([
  ...PROXY_PERMISSION_FLAGS,
  `--v8-flags=${PROXY_V8_FLAGS}`,
]);
