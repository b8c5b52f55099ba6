/**
 * What the lab tests with real software (redis, tcp-echo, openssl, grpcio, h2c; issue 16 item 7) share:
 * a lab brought up from a topology text and always taken down, policies applied by name, and commands
 * run inside a workload's namespace (as `kubectl exec` would) with a deadline, timed.
 *
 * @module
 */
import { join } from "node:path";
import {
  execArgv,
  labApply,
  labDelete,
  labDown,
  labPaths,
  type LabState,
  labUp,
  workloadOf,
} from "../../deploy/lab/mod.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";
import { eventually } from "./e2e_support.ts";

/** A running lab of one test file. */
export interface RealLab {
  lab: string;
  /** The test's temp directory (policy files, data files). */
  dir: string;
  state: LabState;
  /** Policy file names currently applied. */
  applied: Set<string>;
  /** Notes a timing for the test's figures. */
  note(row: string, ms: number): void;
}

/**
 * Brings up lab `<prefix><pid>` on `subnet` from `topology` (text, or made from the temp directory's
 * path), after writing `files` (name → YAML) into that directory and running `prepare` on it; runs
 * `fn`, and always takes the lab down (then prints the timings as a figure).
 */
export async function withRealLab(
  prefix: string,
  subnet: string,
  topology: string | ((dir: string) => string),
  files: Record<string, string>,
  fn: (env: RealLab) => Promise<void>,
  prepare?: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: `${prefix}-e2e-` });
  const lab = `${prefix}${Deno.pid}`;
  const timings: string[] = [];
  const started = Date.now();
  try {
    for (const [name, yaml] of Object.entries(files)) await Deno.writeTextFile(join(dir, name), yaml);
    await prepare?.(dir);
    await Deno.writeTextFile(
      join(dir, "topology.yaml"),
      typeof topology === "string" ? topology : topology(dir),
    );
    const state = await labUp(join(dir, "topology.yaml"), { name: lab, subnet });
    const env: RealLab = {
      lab,
      dir,
      state,
      applied: new Set(),
      note: (row, ms) => timings.push(`${row}: ${ms} ms`),
    };
    env.note("lab up", Date.now() - started);
    await fn(env);
  } finally {
    timings.push(`total: ${Date.now() - started} ms`);
    figure(timings.join("\n"));
    await labDown(lab);
    await Deno.remove(dir, { recursive: true });
  }
}

/** Makes `names` (files of the test's directory) the only policies applied: `lab apply` / `lab delete`. */
export async function setPolicies(env: RealLab, ...names: string[]): Promise<void> {
  const gone = [...env.applied].filter((n) => !names.includes(n));
  if (gone.length > 0) await labDelete(env.lab, gone);
  const added = names.filter((n) => !env.applied.has(n));
  if (added.length > 0) await labApply(env.lab, added.map((n) => join(env.dir, n)));
  env.applied = new Set(names);
}

/** What a command run in a workload did. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time, ms. */
  ms: number;
}

/**
 * Runs `sh -c <script>` in workload `ref`'s namespace (its hosts file, iptables capture, variables),
 * killed after `timeoutMs` (default 10 s; then code is the signal's 128+n).
 */
export async function inWorkload(
  env: RealLab,
  ref: string,
  script: string,
  timeoutMs = 10_000,
): Promise<Ran> {
  const [cmd, ...args] = execArgv(workloadOf(env.state, ref), ["sh", "-c", script]);
  const deadline = processDeadline(timeoutMs, `${ref}: ${script}`);
  const start = Date.now();
  const out = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
  }).output();
  deadline.end();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: out.signal ? 128 + 9 : out.code,
    stdout: text(out.stdout),
    stderr: text(out.stderr),
    ms: Date.now() - start,
  };
}

/**
 * e2e_support's `eventually` (polls every 50 ms until `check` returns undefined), timed: returns the ms
 * it took.
 *
 * @throws Error naming `what` and the last mismatch after `timeoutMs`
 */
export async function until(
  what: string,
  check: () => Promise<string | undefined>,
  timeoutMs = 5000,
): Promise<number> {
  const start = Date.now();
  await eventually(what, check, timeoutMs);
  return Date.now() - start;
}

/** A PeerAuthentication STRICT for `namespace` (`mesh-system`: mesh-wide). */
export function strictPeerAuthentication(namespace: string): string {
  return `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: ${namespace}}
spec: {mtls: {mode: STRICT}}
`;
}

/** The lab's meshd log (`.lab/<lab>/logs/meshd.log`). */
export async function meshdLog(env: RealLab): Promise<string> {
  return await Deno.readTextFile(join(labPaths(env.lab).logs, "meshd.log"));
}
