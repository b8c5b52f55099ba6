/**
 * proxy entry point: `deno task proxy [flags]` or `./dev proxy [flags]` (see cli.ts and proxy/README.md).
 * The gateway mode (`--type router`) is partial: HTTP and HTTPS (SIMPLE, MUTUAL) servers, uri matches (proxy/README.md).
 *
 * @module
 */
import { runProxyCli } from "./cli.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  const write = (stream: { writeSync(p: Uint8Array): number }) => (text: string) => {
    const bytes = encoder.encode(text);
    for (let done = 0; done < bytes.length;) done += stream.writeSync(bytes.subarray(done));
  };
  const code = await runProxyCli(Deno.args, {
    stdout: write(Deno.stdout),
    stderr: write(Deno.stderr),
    env: Deno.env.toObject(),
    cores: navigator.hardwareConcurrency,
    hostname: () => Deno.hostname(),
  });
  Deno.exit(code);
}
