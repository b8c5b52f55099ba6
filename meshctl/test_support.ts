/**
 * Test helpers for meshctl: run the real program as a subprocess, as a user would.
 *
 * @module
 */
const MAIN = new URL("./main.ts", import.meta.url).pathname;
/** The repository root. */
export const ROOT: string = new URL("../", import.meta.url).pathname;

/** What one run printed, and its exit code. */
export interface RunResult {
  code: number;
  out: string;
  err: string;
}

/** Runs meshctl with the permissions of the `meshctl` task. */
export async function meshctl(
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<RunResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-net", "--allow-write", MAIN, ...args],
    cwd: ROOT,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...options.env },
  }).spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const r = await child.output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}
