/**
 * The lab's hands on the host: running `ip` and `iptables`, starting detached processes inside a
 * network namespace with their output in a log file, and finding and ending the processes of a
 * namespace. Everything here needs root.
 *
 * @module
 */

/** What a finished command printed. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

const decoder = new TextDecoder();

/** `deno run` with what the lab's servers (meshd, the test API server) need, before their own flags. */
export const DENO_RUN_SERVER: readonly string[] = [
  Deno.execPath(),
  "run",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
];

/** Runs a command to completion; never throws for a non-zero exit (see {@link mustRun}). */
export async function run(cmd: string, args: string[], options: { stdin?: string } = {}): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const out = await child.output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * Runs a command and returns its standard output.
 *
 * @throws Error with the command line, the exit code and what it wrote on stderr
 */
export async function mustRun(cmd: string, args: string[]): Promise<string> {
  const r = await run(cmd, args);
  if (r.code !== 0) {
    throw new Error(
      `${[cmd, ...args].join(" ")}: exit code ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`,
    );
  }
  return r.stdout;
}

/** Why the lab cannot run here (not root, `ip`, `iptables` or `ip6tables` missing), or undefined when it can. */
export function labUnavailable(): string | undefined {
  if (Deno.uid() !== 0) return "the lab needs root (network namespaces, veth pairs, iptables)";
  for (const tool of ["ip", "iptables", "ip6tables", "curl"]) {
    const found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].some((d) => {
      try {
        return Deno.statSync(`${d}/${tool}`).isFile;
      } catch {
        return false;
      }
    });
    if (!found) return `the lab needs the ${tool} command (Debian: iproute2, iptables, curl)`;
  }
  return undefined;
}

/** The network namespaces on this host (`ip netns list`). */
export async function listNetns(): Promise<string[]> {
  const out = await mustRun("ip", ["netns", "list"]);
  return out.split("\n").map((l) => l.split(" ")[0]).filter((n) => n !== "");
}

/**
 * Starts `argv` inside network namespace `netns`, detached (its own session: it outlives the lab
 * command and a Ctrl-C to it), stdout and stderr appended to `log`.
 *
 * @returns the process id (that of `argv[0]`: `ip netns exec` and the shell both exec)
 */
export function spawnInNetns(
  netns: string,
  argv: string[],
  options: { log: string; env: Record<string, string>; cwd: string },
): number {
  return spawnDetached(["ip", "netns", "exec", netns, ...argv], options);
}

/**
 * Starts `argv` detached (own session, no stdin), stdout and stderr appended to `log`, through
 * `sh -c 'exec "$@"'` so that the returned pid is `argv[0]`'s.
 */
export function spawnDetached(
  argv: string[],
  options: { log: string; env: Record<string, string>; cwd: string },
): number {
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$@" >>"$0" 2>&1 </dev/null', options.log, ...argv],
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  child.unref();
  child.status.catch(() => {});
  return child.pid;
}

/**
 * Whether a process exists and is not a zombie. Asks `ps`: Deno wants --allow-all for reading
 * /proc/<pid>, and has no signal 0.
 */
export async function isAlive(pid: number): Promise<boolean> {
  const r = await run("ps", ["-o", "stat=", "-p", String(pid)]);
  return r.code === 0 && !/^[ZX]/.test(r.stdout.trim());
}

/** The processes in a network namespace (`ip netns pids`); empty when the namespace is gone. */
export async function netnsPids(netns: string): Promise<number[]> {
  const r = await run("ip", ["netns", "pids", netns]);
  if (r.code !== 0) return [];
  return r.stdout.split("\n").filter((l) => /^\d+$/.test(l)).map(Number);
}

/**
 * Ends every process in the given namespaces: SIGTERM, then SIGKILL for those still there after
 * `graceMs`. Finding processes by namespace rather than by recorded pid cannot hit an unrelated
 * process that reused a pid after a crash.
 */
export async function killNetnsProcesses(namespaces: string[], graceMs: number): Promise<number> {
  const pids = (await Promise.all(namespaces.map(netnsPids))).flat();
  const signal = (pid: number, sig: Deno.Signal) => {
    try {
      Deno.kill(pid, sig);
    } catch {
      // gone already
    }
  };
  for (const pid of pids) signal(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  const alive = async () => (await Promise.all(pids.map(async (p) => (await isAlive(p)) ? [p] : []))).flat();
  let left = await alive();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = await alive();
  }
  for (const pid of left) signal(pid, "SIGKILL");
  while ((await alive()).length > 0 && Date.now() < deadline + 2000) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return pids.length;
}

/**
 * Polls `argv` inside `netns` until it exits 0 and `accept` (default: any output) holds for its
 * output, every 100 ms.
 *
 * @throws Error after `timeoutMs`, with the last output
 */
export async function waitInNetns(
  netns: string,
  argv: string[],
  options: {
    timeoutMs: number;
    what: string;
    accept?: (stdout: string) => boolean;
    alive?: () => Promise<boolean>;
  },
): Promise<number> {
  const start = Date.now();
  let last: RunResult | undefined;
  for (;;) {
    last = await run("ip", ["netns", "exec", netns, ...argv]);
    if (last.code === 0 && (options.accept?.(last.stdout) ?? true)) return Date.now() - start;
    if (options.alive && !(await options.alive())) throw new Error(`${options.what}: the process exited`);
    if (Date.now() - start > options.timeoutMs) {
      throw new Error(
        `${options.what}: not ready within ${options.timeoutMs} ms (last: exit ${last.code} ${
          (last.stdout + last.stderr).trim().slice(0, 200)
        })`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
