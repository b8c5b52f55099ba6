/**
 * The lab's entry point: `./dev lab <command>` (deno task lab). See cli.ts and README.md.
 *
 * @module
 */
import { runLab } from "./cli.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  const write = (stream: { writeSync(p: Uint8Array): number }) => (text: string) => {
    const bytes = encoder.encode(text);
    for (let done = 0; done < bytes.length;) done += stream.writeSync(bytes.subarray(done));
  };
  Deno.exit(
    await runLab(Deno.args, {
      stdout: write(Deno.stdout),
      stderr: write(Deno.stderr),
      env: Deno.env.toObject(),
    }),
  );
}
