/**
 * meshd entry point: `deno task meshd <command>` or `./dev meshd <command>`. The commands are
 * `discovery`, `request`, `token`, `version` and `completion` (see cli.ts). PARTIAL: config comes
 * from --configDir or the Kubernetes API (CRDs and gateway Secrets; no Kubernetes service registry
 * yet), and the injection and validation webhooks are not there yet.
 *
 * @module
 */
import { runMeshd } from "./cli.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  const write = (stream: { writeSync(p: Uint8Array): number }) => (text: string) => {
    const bytes = encoder.encode(text);
    // writeSync may write part of the buffer on a pipe.
    for (let done = 0; done < bytes.length;) done += stream.writeSync(bytes.subarray(done));
  };
  const code = await runMeshd(Deno.args, {
    stdout: write(Deno.stdout),
    stderr: write(Deno.stderr),
    env: Deno.env.toObject(),
  });
  Deno.exit(code);
}
