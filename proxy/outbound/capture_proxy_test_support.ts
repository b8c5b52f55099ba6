/**
 * Test support (root): runs ./capture_test_support.ts (the outbound listener in sidecar mode) inside
 * a capture namespace with gid 1337, which the namespace's rules leave alone, and hands the test the
 * namespace's argv prefix and a way to read the listener's counters. Used by ./capture_test.ts and
 * ./capture_ipv6_test.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";

const SUPPORT = new URL("./capture_test_support.ts", import.meta.url).pathname;
const GID = 1337;

/** What ./capture_test_support.ts prints per stdin line. */
export interface CaptureStats {
  counters: Record<string, number>;
  echo: number;
  passthrough: number;
  peers: string[];
}

/** The running listener. */
export interface CaptureProxy {
  stats(): Promise<CaptureStats>;
}

/**
 * Starts the support program in `ns` (`flags`: deno permissions beyond --allow-net; `args`: the
 * program's), runs `fn`, then stops it and removes `ns`.
 *
 * @returns the program's stderr (its log lines)
 */
export async function withCaptureProxy(
  ns: { exec: string[]; remove(): Promise<void> },
  flags: string[],
  args: string[],
  fn: (exec: string[], p: CaptureProxy) => Promise<void>,
): Promise<string> {
  const deadline = processDeadline(60_000, "capture test proxy");
  const child = new Deno.Command("ip", {
    args: [
      ...ns.exec.slice(1),
      "setpriv",
      `--regid=${GID}`,
      "--clear-groups",
      Deno.execPath(),
      "run",
      "--allow-net",
      ...flags,
      SUPPORT,
      ...args,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stdin = child.stdin.getWriter();
  const errText = new Response(child.stderr).text();
  try {
    assert.equal((await lines.read()).value?.trim(), "ready");
    await fn(ns.exec, {
      async stats() {
        await stdin.write(new TextEncoder().encode("\n"));
        return JSON.parse((await lines.read()).value!);
      },
    });
  } finally {
    await stdin.close().catch(() => {});
    child.kill("SIGKILL");
    await child.status;
    await lines.cancel().catch(() => {});
    deadline.end();
    await ns.remove();
  }
  return await errText;
}

/** curl under `exec`: the body, a space and the HTTP status (`000` when none came). */
export async function curl(exec: string[], url: string, ...flags: string[]): Promise<string> {
  const r = await new Deno.Command(exec[0], {
    args: [...exec.slice(1), "curl", "-s", "--max-time", "5", ...flags, "-w", " %{http_code}", url],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(r.stdout);
}
