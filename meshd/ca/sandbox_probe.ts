/**
 * Inside a Worker with narrowed permissions: attempts an operation its sandbox should forbid and
 * reports the outcome, for the tests that prove the sandbox (the CA signer's, the webhooks').
 *
 * @module
 */
import type { ProbeResult, SandboxProbe } from "./signer_protocol.ts";

/** Runs `p`; `allowed: false` with the error's name (`NotCapable`, ...) when the sandbox stopped it. */
export async function runProbe(p: SandboxProbe): Promise<ProbeResult> {
  try {
    switch (p.op) {
      case "read":
        await Deno.readFile(p.path);
        break;
      case "write":
        await Deno.writeTextFile(p.path, "probe");
        break;
      case "net": {
        const conn = await Deno.connect({ hostname: p.hostname, port: p.port });
        conn.close();
        break;
      }
      case "env":
        Deno.env.get(p.name);
        break;
      case "run":
        await new Deno.Command(p.command).output();
        break;
      case "sys":
        Deno.hostname();
        break;
    }
    return { allowed: true };
  } catch (e) {
    return { allowed: false, errorName: (e as Error).name, message: (e as Error).message };
  }
}
