/**
 * meshd entry point: `deno task meshd <command>` or `./dev meshd <command>`. The commands are
 * `discovery`, `request`, `version` and `completion` (see cli.ts). PARTIAL: `meshd discovery` parses
 * and validates every flag and environment variable of the seed and logs the effective
 * configuration, but its servers (xDS, CA, debug, monitoring) come later. `meshd request` needs
 * network access (`--allow-net`), which `deno task meshd` does not grant yet.
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
