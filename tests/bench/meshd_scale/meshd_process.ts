/**
 * The meshd under test: the real `meshd discovery` program (plain-text ADS, metrics, no CA) from a
 * checkout, in its own process, with what the bench reads of it: its metrics, its memory
 * (VmRSS, VmHWM) and its CPU time, its serving children's included.
 *
 * @module
 */
import { pathExists } from "../pair_support.ts";

/** A running meshd. */
export interface Meshd {
  pid: number;
  grpcPort: number;
  /** The Prometheus text of --monitoringAddr. */
  metrics(): Promise<string>;
  /** VmRSS and VmHWM, MiB, of meshd plus its serving children. */
  memory(): { rssMiB: number; hwmMiB: number };
  /** User plus system CPU seconds of meshd plus its serving children. */
  cpuSeconds(): number;
  /** The kernel's part of cpuSeconds (system calls: the socket writes of what meshd sends). */
  systemCpuSeconds(): number;
  /** Has meshd (started with heap_preload.ts) write its memory breakdown as `<dir>/<label>.*`. */
  heapDump(dir: string, label: string): Promise<void>;
  stop(): Promise<void>;
}

function childrenOf(pid: number): number[] {
  return [...Deno.readDirSync(`/proc/${pid}/task`)].flatMap((t) =>
    Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/children`).trim().split(/\s+/).filter(Boolean).map(
      Number,
    )
  );
}

function tree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(tree)];
}

/** VmRSS and VmHWM of one process, MiB. */
export function memoryOf(pid: number): { rssMiB: number; hwmMiB: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)![1]);
  return { rssMiB: kib("VmRSS") / 1024, hwmMiB: kib("VmHWM") / 1024 };
}

/** utime + stime of one process (stime only with "system"), seconds (USER_HZ 100). */
export function cpuOf(pid: number, only?: "system"): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((only === "system" ? 0 : Number(fields[11])) + Number(fields[12])) / 100;
}

/** A loopback port free now. */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * Starts meshd from `root` (a checkout) on `configDir`.
 *
 * @param env extra variables for meshd (DISCO_PUSH_THROTTLE, allocator experiments)
 * @param profileDir when set, meshd writes a V8 CPU profile there on exit
 * @throws when meshd does not log its ADS port and readiness within 120 s
 */
export async function startMeshd(
  root: string,
  configDir: string,
  options: {
    servingChildren: number;
    /** meshd's --grpcTransport (codec or children); absent: meshd's default (older checkouts have no flag). */
    grpcTransport?: string;
    env: Record<string, string>;
    profileDir?: string;
    args?: string[];
    /** Preloaded into meshd (heap_preload.ts). */
    preload?: string;
  },
): Promise<Meshd> {
  const monitoring = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...(options.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${options.profileDir}`] : []),
      // Finer sampling than V8's 1 ms for a push of a few tens of ms (BENCH_PROFILE_INTERVAL_US).
      ...(options.profileDir && Deno.env.get("BENCH_PROFILE_INTERVAL_US")
        ? [`--cpu-prof-interval=${Deno.env.get("BENCH_PROFILE_INTERVAL_US")}`]
        : []),
      ...(options.preload ? ["--preload", options.preload] : []),
      `${root}/meshd/main.ts`,
      "discovery",
      ...["--configDir", configDir, "--grpcAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0"],
      ...["--httpsAddr", "127.0.0.1:0", "--httpAddr", "127.0.0.1:0", "--ctrlz_port", "0"],
      ...["--monitoringAddr", `127.0.0.1:${monitoring}`],
      ...["--servingChildren", String(options.servingChildren)],
      ...(options.grpcTransport ? ["--grpcTransport", options.grpcTransport] : []),
      ...(options.args ?? []),
    ],
    cwd: root,
    env: { NO_COLOR: "1", ENABLE_CA_SERVER: "false", ...options.env },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const deadline = Date.now() + 120_000;
  while (!/meshd ready/.test(out)) {
    if (Date.now() > deadline) throw new Error(`meshd did not get ready within 120 s:\n${out}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`meshd exited:\n${out}`);
    out += value;
  }
  // Keep reading so that meshd never blocks on a full pipe; drop what it logs.
  (async () => {
    while (!(await reader.read()).done);
  })();
  const grpcPort = Number(/ADS listening on \S+ \(port (\d+)\)/.exec(out)![1]);
  return {
    pid: child.pid,
    grpcPort,
    metrics: async () => await (await fetch(`http://127.0.0.1:${monitoring}/metrics`)).text(),
    memory: () =>
      tree(child.pid).map(memoryOf).reduce((a, b) => ({
        rssMiB: a.rssMiB + b.rssMiB,
        hwmMiB: a.hwmMiB + b.hwmMiB,
      })),
    cpuSeconds: () => tree(child.pid).map((pid) => cpuOf(pid)).reduce((a, b) => a + b, 0),
    systemCpuSeconds: () => tree(child.pid).map((pid) => cpuOf(pid, "system")).reduce((a, b) => a + b, 0),
    async heapDump(dir: string, label: string) {
      await Deno.writeTextFile(`${dir}/label`, label);
      Deno.kill(child.pid, "SIGUSR2");
      const deadline = Date.now() + 300_000;
      while (!(await pathExists(`${dir}/${label}.done`))) {
        if (Date.now() > deadline) throw new Error(`meshd wrote no ${label} heap dump within 300 s`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** The samples of a counter with one label in Prometheus text, by that label's value (`{type="x"}` gives x). */
export function labelledCounter(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf("}");
    const label = /="([^"]*)"/.exec(line.slice(name.length, close))?.[1] ?? "";
    out[label] = Number(line.slice(close + 2));
  }
  return out;
}

/** Sum and count of an unlabelled histogram in Prometheus text; zeros when absent. */
export function histogram(text: string, name: string): { sum: number; count: number } {
  const value = (suffix: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}_${suffix} `));
    return line === undefined ? 0 : Number(line.slice(name.length + suffix.length + 2));
  };
  return { sum: value("sum"), count: value("count") };
}
