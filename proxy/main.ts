/**
 * proxy entry point. NOT IMPLEMENTED YET: the sidecar data plane comes with issue #4; this program
 * only says so, so that scripts fail clearly instead of silently.
 *
 * @module
 */
if (import.meta.main) {
  console.error("proxy: not implemented yet (issue #4: the sidecar data plane)");
  Deno.exit(1);
}
