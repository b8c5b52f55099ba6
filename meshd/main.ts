/**
 * meshd entry point: `deno task meshd <command>` or `./dev meshd <command>`. The commands are
 * `discovery`, `request`, `token`, `version` and `completion` (see cli.ts). PARTIAL: config comes
 * from --configDir or the Kubernetes API (CRDs and gateway Secrets; no Kubernetes service registry
 * yet), and the injection and validation webhooks are not there yet.
 *
 * @module
 */
import { runMeshd } from "./cli.ts";
import { BatchedOutput } from "./logging/batched_output.ts";

if (import.meta.main) {
  const stdout = new BatchedOutput(Deno.stdout);
  const stderr = new BatchedOutput(Deno.stderr);
  const flush = (): void => {
    stdout.flush();
    stderr.flush();
  };
  // What waits in a batch is written before the runtime reports an uncaught error and exits.
  for (const event of ["error", "unhandledrejection", "unload"]) globalThis.addEventListener(event, flush);
  const code = await runMeshd(Deno.args, {
    stdout: stdout.write,
    stderr: stderr.write,
    env: Deno.env.toObject(),
  });
  flush();
  Deno.exit(code);
}
