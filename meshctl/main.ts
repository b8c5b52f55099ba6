/**
 * meshctl entry point: `deno task meshctl <command>` or `./dev meshctl <command>`.
 *
 * @module
 */
import { runMeshctl } from "./cli.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  const code = await runMeshctl(Deno.args, {
    stdout: (t) => Deno.stdout.writeSync(encoder.encode(t)),
    stderr: (t) => Deno.stderr.writeSync(encoder.encode(t)),
    setExitCode: () => {},
  });
  Deno.exit(code);
}
