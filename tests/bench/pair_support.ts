/**
 * What the pair benchmarks (proxy_pair/, protocol_pair/) share: child processes that die with the run,
 * CPU seconds and memory per process from /proc, an in-process meshd + CA with the mesh's proxy pair
 * as real subprocesses, and certificates for the HAProxy pair signed by the same CA.
 *
 * @module
 */
import { join } from "node:path";
import { startCa, startMeshd, strictPairConfig } from "../integration/meshd_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { PROXY_PERMISSION_FLAGS } from "../../shared/internal/proxy_permissions.ts";

const CLK_TCK = 100;
const root = new URL("../../", import.meta.url).pathname;

/**
 * The checkout whose `proxy` program the pair benches run: BENCH_PROXY_ROOT (a before/after run: `git
 * worktree add /tmp/base-<you> main`), else this one. Its deno.json gives the proxy's V8 flags; the
 * permission flags are this checkout's.
 */
export function proxyRoot(): string {
  return Deno.env.get("BENCH_PROXY_ROOT") ?? root;
}

/** Progress on stderr (stdout carries the one JSON line). */
export function log(msg: string): void {
  console.error(`bench: ${msg}`);
}

/** `n` rounded to `d` decimals. */
export function round(n: number, d = 2): number {
  return Math.round(n * 10 ** d) / 10 ** d;
}

/** A load generator's time (`v` in `unit`: us, ms or s) in ms. */
export function msOf(v: string, unit: string): number {
  return Number(v) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit];
}

/** A spawned child with the tail (4,000 characters) of its stderr, for error messages. */
export type Child = Deno.ChildProcess & { readonly tail: string };

/** Child processes, temp files and cleanups of one benchmark run; `close()` ends them all. */
export class BenchRun {
  readonly children: Deno.ChildProcess[] = [];
  readonly cleanups: (() => Promise<void>)[] = [];
  private constructor(readonly dir: string) {}

  /** A run with its own temp directory (prefix `prefix`). */
  static async start(prefix: string): Promise<BenchRun> {
    return new BenchRun(await Deno.makeTempDir({ prefix }));
  }

  /**
   * Starts `cmd` in `cwd` (default: ours), stdout discarded (or, with `stdoutFile`, appended to that file:
   * V8's `--trace-gc` writes there), stderr kept in `tail`; `close()` kills it.
   */
  spawn(
    cmd: string,
    args: string[],
    env: Record<string, string> = {},
    cwd?: string,
    stdoutFile?: string,
  ): Child {
    const stdout = stdoutFile ? "piped" : "null";
    const child = new Deno.Command(cmd, { args, stdin: "null", stdout, stderr: "piped", env, cwd }).spawn();
    this.children.push(child);
    if (stdoutFile) {
      Deno.open(stdoutFile, { create: true, append: true })
        .then((f) => child.stdout.pipeTo(f.writable))
        .catch(() => {});
    }
    let tail = "";
    child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({ write: (c) => void (tail = (tail + c).slice(-4000)) }),
    ).catch(() => {});
    Object.defineProperty(child, "tail", { get: () => tail });
    return child as Child;
  }

  /** Kills every child (SIGKILL), runs the cleanups in reverse, removes the directory. */
  async close(): Promise<void> {
    for (const c of this.children) {
      try {
        c.kill("SIGKILL");
      } catch {
        // Already gone.
      }
      await c.status;
    }
    for (const f of this.cleanups.reverse()) await f().catch(() => {});
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/**
 * BENCH_PROXY_MESH_TLS=<deno|node>: the client proxy's `--meshTlsClient` (its TLS client on the
 * HTTP/1.1 mesh leg); unset: the proxy's default, and no flag (a checkout that predates it runs too).
 */
export function meshTlsArgs(value = Deno.env.get("BENCH_PROXY_MESH_TLS")): string[] {
  return value ? [`--meshTlsClient=${value}`] : [];
}

/**
 * The proxy program a bench runs, relative to {@link proxyRoot}: BENCH_PROXY_ENTRY (e.g.
 * `build/proxy/main.js`, the bundle of `deno task bundle:proxy`), else `proxy/main.ts`.
 */
export function proxyEntry(): string {
  return Deno.env.get("BENCH_PROXY_ENTRY") ?? "proxy/main.ts";
}

/** More `deno run` flags for the proxy, from BENCH_PROXY_DENO_FLAGS (space-separated; e.g. `--no-code-cache`). */
export function proxyDenoFlags(): string[] {
  return Deno.env.get("BENCH_PROXY_DENO_FLAGS")?.split(/\s+/).filter((f) => f !== "") ?? [];
}

/**
 * `--inspect` for a bench's `role` proxy when BENCH_PROXY_INSPECT is set (server proxy 127.0.0.1:9229,
 * client proxy 9230; proxy_pair/heap_summary.ts attaches there), else nothing.
 */
export function proxyInspectFlags(role: "client" | "server"): string[] {
  if (!Deno.env.get("BENCH_PROXY_INSPECT")) return [];
  return [`--inspect=127.0.0.1:${role === "server" ? 9229 : 9230}`];
}

/**
 * Where a bench's `role` proxy (`client` or `server`) writes its stdout: `<BENCH_PROXY_STDOUT_DIR>/<role>.log`
 * when that variable is set (for example with `BENCH_PROXY_V8_FLAGS=...,--trace-gc`), else nowhere.
 */
export function proxyStdoutFile(role: string): string | undefined {
  const dir = Deno.env.get("BENCH_PROXY_STDOUT_DIR");
  return dir ? join(dir, `${role}.log`) : undefined;
}

/**
 * The proxy's `--v8-flags` for a bench: BENCH_PROXY_V8_FLAGS when set (experiments), else the `proxy`
 * task's own (deno.json of `proxyRoot()`), so that a bench measures what ships. "" when there are none.
 */
export function proxyV8Flags(): string {
  const env = Deno.env.get("BENCH_PROXY_V8_FLAGS");
  if (env !== undefined) return env;
  const task: string = JSON.parse(Deno.readTextFileSync(join(proxyRoot(), "deno.json"))).tasks.proxy;
  return /--v8-flags=(\S+)/.exec(task)?.[1] ?? "";
}

/**
 * Runs `cmd` to the end and returns its stdout.
 *
 * @throws Error with the command and its stderr when it exits non-zero
 */
export async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return text;
}

/**
 * Where a figure comes from: `commit` is the checkout's HEAD (short hash, "+dirty" when tracked files
 * differ from it, "unknown" outside git), `proxy_commit` the same of BENCH_PROXY_ROOT when it is set,
 * and `command` the command line that reproduces the run,
 * `./dev deno run -A <script and args>` preceded by the BENCH_* variables that were set, except `omitEnv`
 * (variables a bench sets for itself).
 */
export async function runProvenance(
  scriptAndArgs: string[],
  omitEnv: string[] = [],
): Promise<{ commit: string; command: string; proxy_commit?: string }> {
  const commit = await checkoutCommit(root);
  const proxy = proxyRoot() === root ? {} : { proxy_commit: await checkoutCommit(proxyRoot()) };
  const env = Object.entries(Deno.env.toObject()).filter(([k]) =>
    k.startsWith("BENCH_") && !omitEnv.includes(k)
  ).sort()
    .map(([k, v]) => `${k}=${v.includes(" ") || v === "" ? JSON.stringify(v) : v} `).join("");
  return { commit, command: `${env}./dev deno run -A ${scriptAndArgs.join(" ")}`, ...proxy };
}

/** `dir`'s HEAD, short, "+dirty" when tracked files differ from it; "unknown" outside git. */
export async function checkoutCommit(dir: string): Promise<string> {
  try {
    const head = (await run("git", ["-C", dir, "rev-parse", "--short", "HEAD"])).trim();
    const dirty = (await run("git", ["-C", dir, "status", "--porcelain", "--untracked-files=no"])).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    // Not a git checkout (an unpacked copy).
    return "unknown";
  }
}

/** User + system CPU seconds of `pid` so far (/proc/<pid>/stat utime+stime). */
export function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields 14 and 15 (utime, stime) are indexes 11 and 12 after "pid (comm) "
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

/** VmRSS and VmHWM (peak) of `pid`, MiB. */
export function memMiB(pid: number): { rss: number; hwm: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: round(kb("VmRSS") / 1024), hwm: round(kb("VmHWM") / 1024) };
}

/** Runs `load`, returning its result and the CPU seconds each pid used meanwhile (`cpu_s`). */
export async function measured<T>(
  pids: Record<string, number>,
  load: () => Promise<T>,
): Promise<T & { cpu_s: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
  const result = await load();
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, round(cpuSeconds(p) - before[k])]));
  return { ...result, cpu_s: cpu };
}

/** Polls `url` with curl (Host `host`) every 100 ms until 200; throws naming `what` after `timeoutMs`. */
export async function waitHttp(url: string, host: string, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await new Deno.Command("curl", {
      args: ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", "-H", `Host: ${host}`, url],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (new TextDecoder().decode(r.stdout) === "200") return;
    if (Date.now() > deadline) throw new Error(`${what} not answering 200 at ${url}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The service port of the bench's one service `app.foo.svc.cluster.local` (a ServiceEntry port). */
export interface BenchPort {
  name: string;
  /** The service port. */
  number: number;
  /** The server proxy's inbound port for it. */
  targetPort: number;
  /** Istio's protocol (HTTP, HTTP2, GRPC, TCP). */
  protocol: string;
  /** Where the app listens behind the server proxy (127.0.0.1). */
  appPort: number;
}

/** meshd + CA and the mesh's proxy pair: a client proxy (outbound) and a server proxy (inbound). */
export interface MeshPair {
  ca: Awaited<ReturnType<typeof startCa>>;
  rootPem: string;
  clientProxy: Child;
  serverProxy: Child;
  clientAdmin: number;
  serverAdmin: number;
  /** The client proxy's outbound listener port on 127.0.0.1. */
  outboundPort: number;
}

/**
 * Starts meshd (in process) with the ServiceEntry `app.foo.svc.cluster.local` (`ports`), a
 * WorkloadEntry app-1 (127.0.0.1, sa app) and sleep-1 (127.0.0.2, sa sleep), STRICT
 * PeerAuthentication in foo; then the real `proxy` program twice: the server proxy with one
 * `--inbound` per port, the client proxy with `--outbound`. Waits for both `/ready`.
 *
 * @param options concurrency: both proxies' --concurrency; v8Flags: the proxies' --v8-flags ("" none);
 *   outboundPort: the client proxy's outbound port (default: a free one); addresses: the
 *   ServiceEntry's VIPs (default none: the client reaches it by Host through the outbound listener);
 *   clientArgs: more flags of the client proxy (e.g. `--meshTlsClient=deno`)
 */
export async function startMeshPair(
  bench: BenchRun,
  ports: BenchPort[],
  options: {
    concurrency: number;
    v8Flags: string;
    outboundPort?: number;
    addresses?: string[];
    clientArgs?: string[];
  },
): Promise<MeshPair> {
  const dir = bench.dir;
  await Deno.mkdir(join(dir, "config"));
  const portsYaml = ports.map((p) =>
    `{name: ${p.name}, number: ${p.number}, targetPort: ${p.targetPort}, protocol: ${p.protocol}}`
  );
  await Deno.writeTextFile(
    join(dir, "config", "mesh.yaml"),
    strictPairConfig("app", portsYaml, options.addresses),
  );
  const ca = await startCa(join(dir, "ca"));
  bench.cleanups.push(() => ca.stop());
  const meshd = await startMeshd(join(dir, "config"), { ca });
  bench.cleanups.push(() => meshd.stop());
  const rootPem = join(dir, "root-cert.pem");
  await Deno.writeTextFile(rootPem, ca.trustBundlePem);
  for (const sa of ["app", "sleep"]) {
    const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: sa });
    await Deno.writeTextFile(join(dir, `token-${sa}`), token);
  }
  const proxyArgs = (sa: string, entry: string, address: string, adminPort: number, extra: string[]) => [
    "run",
    ...PROXY_PERMISSION_FLAGS,
    ...(options.v8Flags ? [`--v8-flags=${options.v8Flags}`] : []),
    ...proxyDenoFlags(),
    ...proxyInspectFlags(sa === "app" ? "server" : "client"),
    join(proxyRoot(), proxyEntry()),
    `--discoveryAddress=127.0.0.1:${meshd.securePort}`,
    "--namespace=foo",
    `--serviceAccount=${sa}`,
    `--workloadEntry=${entry}`,
    `--address=${address}`,
    `--tokenFile=${join(dir, `token-${sa}`)}`,
    `--rootCertFile=${rootPem}`,
    `--proxy-admin-port=${adminPort}`,
    `--concurrency=${options.concurrency}`,
    ...extra,
  ];
  const serverAdmin = freePort();
  const clientAdmin = freePort();
  const outboundPort = options.outboundPort ?? freePort();
  const serverProxy = bench.spawn(
    Deno.execPath(),
    proxyArgs("app", "app-1", "127.0.0.1", serverAdmin, [
      "--inboundBindAddress=127.0.0.1",
      ...ports.map((p) => `--inbound=${p.targetPort}=127.0.0.1:${p.appPort}`),
    ]),
    { NO_COLOR: "1" },
    proxyRoot(),
    proxyStdoutFile("server"),
  );
  const clientProxy = bench.spawn(
    Deno.execPath(),
    proxyArgs("sleep", "sleep-1", "127.0.0.2", clientAdmin, [
      `--outbound=127.0.0.1:${outboundPort}`,
      ...(options.clientArgs ?? []),
    ]),
    { NO_COLOR: "1" },
    proxyRoot(),
    proxyStdoutFile("client"),
  );
  await waitHttp(`http://127.0.0.1:${serverAdmin}/ready`, "localhost", "server proxy /ready");
  await waitHttp(`http://127.0.0.1:${clientAdmin}/ready`, "localhost", "client proxy /ready");
  return { ca, rootPem, clientProxy, serverProxy, clientAdmin, serverAdmin, outboundPort };
}

/** A leaf's files: the chain (leaf first, no root), its key, and both in one file (chain, then key). */
export interface LeafFiles {
  cert: string;
  key: string;
  pem: string;
}

/** An EC P-256 key and a certificate for SPIFFE `foo/<sa>` from `ca`, as files in the run's directory. */
export async function leafFiles(
  bench: BenchRun,
  ca: MeshPair["ca"],
  name: string,
  sa: string,
): Promise<LeafFiles> {
  const key = join(bench.dir, `${name}.key`);
  const csr = join(bench.dir, `${name}.csr`);
  await run("openssl", [
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    "/",
    "-keyout",
    key,
    "-out",
    csr,
  ]);
  const chain = await ca.sign({ csrPem: await Deno.readTextFile(csr), namespace: "foo", serviceAccount: sa });
  const cert = join(bench.dir, `${name}.crt`);
  await Deno.writeTextFile(cert, chain.slice(0, -1).join(""));
  const pem = join(bench.dir, `${name}.pem`);
  await Deno.writeTextFile(pem, chain.slice(0, -1).join("") + (await Deno.readTextFile(key)));
  return { cert, key, pem };
}

/**
 * An EC P-256 key and a certificate for SPIFFE `foo/<sa>` from `ca`, in one PEM file (chain, then key),
 * as haproxy's `crt` wants it; returns the file's path.
 */
export async function haproxyPem(
  bench: BenchRun,
  ca: MeshPair["ca"],
  name: string,
  sa: string,
): Promise<string> {
  return (await leafFiles(bench, ca, name, sa)).pem;
}

/** A counter of the proxy's admin `/stats` text (NaN when absent). */
export async function adminStat(adminPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/stats`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}: `));
  return line ? Number(line.slice(name.length + 2)) : NaN;
}

/** Whether `path` exists (a file or a folder). */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
