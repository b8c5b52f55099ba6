/**
 * Helpers for the tests of this folder: running the real kubectl against a started server, and
 * waiting for a condition with a deadline. Not used by the server.
 *
 * @module
 */
import { processDeadline } from "../../../shared/internal/testing/deadline.ts";
import { commandMissing, type Missing } from "../../../shared/internal/testing/prerequisites.ts";

/** The kubectl binary the tests drive (kubectl 1.32 on these machines). */
export const KUBECTL = "/usr/bin/kubectl";

/** Why kubectl tests cannot run, or undefined. */
export function kubectlMissing(): Missing {
  try {
    Deno.statSync(KUBECTL);
    return undefined;
  } catch {
    return commandMissing("kubectl");
  }
}

/** What kubectl printed and its exit code. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `kubectl --kubeconfig <kubeconfig> <args>` with `stdin` as input, killed after `ms`. */
export async function kubectl(
  kubeconfig: string,
  args: string[],
  stdin = "",
  ms = 20_000,
): Promise<KubectlResult> {
  const deadline = processDeadline(ms, `kubectl ${args.join(" ")}`);
  const child = new Deno.Command(KUBECTL, {
    args: ["--kubeconfig", kubeconfig, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
    env: { HOME: Deno.makeTempDirSync({ prefix: "kubectl-home-" }) },
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const out = await child.output();
  deadline.end();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs kubectl and throws with its stderr unless it exits 0; returns stdout. */
export async function kubectlOk(kubeconfig: string, args: string[], stdin = ""): Promise<string> {
  const r = await kubectl(kubeconfig, args, stdin);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** Polls `cond` every 20 ms until it holds, or throws naming `what` after `ms`. */
export async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits until undici (client-node 2's HTTP client) has dropped its module-wide 500 ms "fast timer"
 * tick: it re-arms while connect or body timeouts are pending and stops two ticks after the last one
 * was cleared. Without this wait Deno's op sanitizer reports that tick as a leaked timer.
 */
export async function settleClientTimers(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1600));
}
