/**
 * Proxy pair benchmark (proxy issue, "Benchmark"): one run compares
 *
 * - `direct`: wrk/hey straight to a local HTTP app (a Deno.serve echo app in its own process);
 * - `mesh`: a client `proxy` (--outbound) and a server `proxy` (--inbound) with automatic mutual TLS
 *   (STRICT PeerAuthentication, so plain text cannot pass unnoticed), the app reached as the service
 *   `app.foo.svc.cluster.local:8000` through the client proxy (redirected request, routed by Host);
 *   both proxies are the real program as subprocesses against an in-process meshd + CA;
 * - `haproxy`: Debian's haproxy in the same two roles (client side: plain HTTP in, TLS with a client
 *   certificate out; server side: TLS with client-certificate verification in, plain HTTP to the app),
 *   certificates signed by the same test CA.
 *
 * Loads (loopback only, bounded in time): wrk -c50 -t2 -d10s keep-alive (maximum throughput), and
 * hey -z 10s -c 16 -q 63 POST with a 1 KiB body (about 1,000 req/s: p50/p90/p99). CPU seconds per proxy
 * process over each load run (/proc/<pid>/stat utime+stime), RSS (VmRSS, VmHWM) after the runs.
 * Prints one JSON line.
 *
 * Run: ./dev deno run -A tests/bench/proxy_pair/main.ts [concurrency=1] [seconds=10]
 * (concurrency: the proxies' --concurrency and haproxy's nbthread.)
 *
 * @module
 */
import { join } from "node:path";
import { startCa, startMeshd } from "../../integration/meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";

const concurrency = Number(Deno.args[0] ?? 1);
const seconds = Number(Deno.args[1] ?? 10);
/** Which targets to load (BENCH_TARGETS=mesh,haproxy for a quicker run); all three by default. */
const only = Deno.env.get("BENCH_TARGETS")?.split(",");
/**
 * The proxy runs with the `proxy` task's own `--v8-flags` (deno.json), so the bench measures what ships;
 * BENCH_PROXY_V8_FLAGS replaces them for experiments.
 */
const proxyV8Flags = Deno.env.get("BENCH_PROXY_V8_FLAGS") ?? taskV8Flags();

function taskV8Flags(): string {
  const task: string =
    JSON.parse(Deno.readTextFileSync(new URL("../../../deno.json", import.meta.url))).tasks.proxy;
  return /--v8-flags=(\S+)/.exec(task)?.[1] ?? "";
}
const HOST = "app.foo.svc.cluster.local:8000";
const CLK_TCK = 100;

const root = new URL("../../../", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "proxy-pair-bench-" });
const children: Deno.ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

function log(msg: string): void {
  console.error(`bench: ${msg}`);
}

function spawn(cmd: string, args: string[], env: Record<string, string> = {}): Deno.ChildProcess {
  const child = new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "piped", env }).spawn();
  children.push(child);
  // Drain stderr (keep the tail for error messages).
  let tail = "";
  child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (c) => void (tail = (tail + c).slice(-4000)) }),
  ).catch(() => {});
  Object.defineProperty(child, "tail", { get: () => tail });
  return child;
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return text;
}

async function waitHttp(url: string, host: string, what: string, timeoutMs = 30_000): Promise<void> {
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

function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields 14 and 15 (utime, stime) are indexes 11 and 12 after "pid (comm) "
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

function memMiB(pid: number): { rss: number; hwm: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: round(kb("VmRSS") / 1024), hwm: round(kb("VmHWM") / 1024) };
}

function round(n: number, d = 2): number {
  return Math.round(n * 10 ** d) / 10 ** d;
}

interface Wrk {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

function ms(v: string, unit: string): number {
  return Number(v) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit];
}

async function wrk(url: string): Promise<Wrk> {
  const out = await run("wrk", [
    "-c50",
    "-t2",
    `-d${seconds}s`,
    "--timeout",
    "5s",
    "--latency",
    "-H",
    `Host: ${HOST}`,
    url,
  ]);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, "m").exec(out);
    return m ? round(ms(m[1], m[2]), 3) : NaN;
  };
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    rps: round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), 0),
    p50_ms: pct("50"),
    p99_ms: pct("99"),
    errors: (errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0),
  };
}

interface Hey {
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  ok: number;
  non200: number;
  errors: number;
}

async function hey(url: string, body: string): Promise<Hey> {
  const out = await run("hey", [
    "-z",
    `${seconds}s`,
    "-c",
    "16",
    "-q",
    "63",
    "-t",
    "5",
    "-m",
    "POST",
    "-D",
    body,
    "-host",
    HOST,
    url,
  ]);
  const pct = (p: string) =>
    round(Number(new RegExp(`${p}%{1,2} in ([\\d.]+) secs`).exec(out)![1]) * 1000, 3);
  const codes = [...out.matchAll(/\[(\d+)\]\s+(\d+) responses/g)];
  const ok = codes.filter((c) => c[1] === "200").reduce((a, c) => a + Number(c[2]), 0);
  const all = codes.reduce((a, c) => a + Number(c[2]), 0);
  const errSection = out.split("Error distribution:")[1] ?? "";
  const errors = [...errSection.matchAll(/\[(\d+)\]/g)].reduce((a, m) => a + Number(m[1]), 0);
  return {
    rps: round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), 0),
    p50_ms: pct("50"),
    p90_ms: pct("90"),
    p99_ms: pct("99"),
    ok,
    non200: all - ok,
    errors,
  };
}

/** Runs `load`, returning its result and the CPU seconds each pid used meanwhile. */
async function measured<T>(pids: Record<string, number>, load: () => Promise<T>) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
  const result = await load();
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, round(cpuSeconds(p) - before[k])]));
  return { ...result, cpu_s: cpu };
}

async function keyAndCert(ca: Awaited<ReturnType<typeof startCa>>, name: string, sa: string) {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
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
  const pem = join(dir, `${name}.pem`);
  // haproxy wants the chain and the key in one file
  await Deno.writeTextFile(pem, chain.slice(0, -1).join("") + (await Deno.readTextFile(key)));
  return pem;
}

function haproxyConfig(frontend: string, backend: string): string {
  return `global
  nbthread ${concurrency}
  maxconn 2000
  tune.ssl.default-dh-param 2048
defaults
  mode http
  option http-keep-alive
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  http-reuse always
frontend fe
  ${frontend}
  default_backend be
backend be
  ${backend}
`;
}

async function main() {
  const inboundPort = freePort();
  await Deno.mkdir(join(dir, "config"));
  await Deno.writeTextFile(
    join(dir, "config", "mesh.yaml"),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: app, namespace: foo}
spec:
  hosts: [app.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: ${inboundPort}, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: app}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: app-1, namespace: foo}
spec: {address: 127.0.0.1, labels: {app: app}, serviceAccount: app}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: 127.0.0.2, labels: {app: sleep}, serviceAccount: sleep}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`,
  );
  const ca = await startCa(join(dir, "ca"));
  cleanups.push(() => ca.stop());
  const meshd = await startMeshd(join(dir, "config"), { ca });
  cleanups.push(() => meshd.stop());
  await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
  for (const sa of ["app", "sleep"]) {
    const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: sa });
    await Deno.writeTextFile(join(dir, `token-${sa}`), token);
  }
  const body = join(dir, "body-1k");
  await Deno.writeTextFile(body, "x".repeat(1024));

  // The app: a Deno.serve echo app in its own process.
  const appPort = freePort();
  const appProc = spawn(Deno.execPath(), [
    "eval",
    `Deno.serve({hostname: "127.0.0.1", port: ${appPort}, onListen() {}}, async (req) =>
       req.method === "POST" ? new Response(await req.arrayBuffer()) : new Response("hello from the app\\n"));`,
  ], { NO_COLOR: "1" });
  await waitHttp(`http://127.0.0.1:${appPort}/`, HOST, "app");

  // The proxy pair.
  const proxyArgs = (sa: string, entry: string, address: string, adminPort: number, extra: string[]) => [
    "run",
    "--allow-read",
    "--allow-env",
    "--allow-net",
    "--allow-sys",
    ...(proxyV8Flags ? [`--v8-flags=${proxyV8Flags}`] : []),
    join(root, "proxy/main.ts"),
    `--discoveryAddress=127.0.0.1:${meshd.securePort}`,
    "--namespace=foo",
    `--serviceAccount=${sa}`,
    `--workloadEntry=${entry}`,
    `--address=${address}`,
    `--tokenFile=${join(dir, `token-${sa}`)}`,
    `--rootCertFile=${join(dir, "root-cert.pem")}`,
    `--proxy-admin-port=${adminPort}`,
    `--concurrency=${concurrency}`,
    ...extra,
  ];
  const serverAdmin = freePort();
  const clientAdmin = freePort();
  const outboundPort = freePort();
  const serverProxy = spawn(
    Deno.execPath(),
    proxyArgs("app", "app-1", "127.0.0.1", serverAdmin, [
      "--inboundBindAddress=127.0.0.1",
      `--inbound=${inboundPort}=127.0.0.1:${appPort}`,
    ]),
    { NO_COLOR: "1" },
  );
  const clientProxy = spawn(
    Deno.execPath(),
    proxyArgs("sleep", "sleep-1", "127.0.0.2", clientAdmin, [`--outbound=127.0.0.1:${outboundPort}`]),
    { NO_COLOR: "1" },
  );
  await waitHttp(`http://127.0.0.1:${serverAdmin}/ready`, "localhost", "server proxy /ready");
  await waitHttp(`http://127.0.0.1:${clientAdmin}/ready`, "localhost", "client proxy /ready");
  const meshUrl = `http://127.0.0.1:${outboundPort}/`;
  await waitHttp(meshUrl, HOST, "the app through the proxy pair");

  // The haproxy pair.
  const hapServerPem = await keyAndCert(ca, "hap-server", "app");
  const hapClientPem = await keyAndCert(ca, "hap-client", "sleep");
  const rootPem = join(dir, "root-cert.pem");
  const hapServerPort = freePort();
  const hapClientPort = freePort();
  await Deno.writeTextFile(
    join(dir, "hap-server.cfg"),
    haproxyConfig(
      `bind 127.0.0.1:${hapServerPort} ssl crt ${hapServerPem} ca-file ${rootPem} verify required`,
      `server app 127.0.0.1:${appPort}`,
    ),
  );
  await Deno.writeTextFile(
    join(dir, "hap-client.cfg"),
    haproxyConfig(
      `bind 127.0.0.1:${hapClientPort}`,
      `server up 127.0.0.1:${hapServerPort} ssl crt ${hapClientPem} ca-file ${rootPem} verify required`,
    ),
  );
  const hapServer = spawn("haproxy", ["-db", "-f", join(dir, "hap-server.cfg")]);
  const hapClient = spawn("haproxy", ["-db", "-f", join(dir, "hap-client.cfg")]);
  const hapUrl = `http://127.0.0.1:${hapClientPort}/`;
  await waitHttp(hapUrl, HOST, "the app through the haproxy pair");
  // Check the haproxy server side really requires a client certificate.
  const noCert = await new Deno.Command("curl", {
    args: ["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", `https://127.0.0.1:${hapServerPort}/`],
    stdout: "piped",
    stderr: "null",
  }).output();
  const hapRefusesNoCert = new TextDecoder().decode(noCert.stdout) !== "200";

  const targets = {
    direct: { url: `http://127.0.0.1:${appPort}/`, pids: { app: appProc.pid } },
    mesh: {
      url: meshUrl,
      pids: { app: appProc.pid, client_proxy: clientProxy.pid, server_proxy: serverProxy.pid },
    },
    haproxy: {
      url: hapUrl,
      pids: { app: appProc.pid, client_haproxy: hapClient.pid, server_haproxy: hapServer.pid },
    },
  };
  // deno-lint-ignore no-explicit-any
  const results: Record<string, any> = {};
  const idleMem = { client_proxy: memMiB(clientProxy.pid), server_proxy: memMiB(serverProxy.pid) };
  for (const [name, t] of Object.entries(targets)) {
    if (only && !only.includes(name)) continue;
    log(`${name}: wrk`);
    const throughput = await measured(t.pids, () => wrk(t.url));
    await new Promise((r) => setTimeout(r, 1000));
    log(`${name}: hey`);
    const latency = await measured(t.pids, () => hey(t.url, body));
    const mem = Object.fromEntries(
      Object.entries(t.pids).filter(([k]) => k !== "app").map(([k, p]) => [k, memMiB(p)]),
    );
    results[name] = {
      throughput,
      latency,
      mem_mib: mem,
      ...(name === "mesh" ? { idle_mem_mib: idleMem } : {}),
    };
    await new Promise((r) => setTimeout(r, 1000));
  }

  // Evidence that the mesh path really was mutual TLS.
  const serverStats = await (await fetch(`http://127.0.0.1:${serverAdmin}/stats`)).text();
  const stat = (name: string) => {
    const line = serverStats.split("\n").find((l) => l.startsWith(`${name}: `));
    return line ? Number(line.slice(name.length + 2)) : NaN;
  };
  const l = `listener.127.0.0.1_${inboundPort}`;
  const meshMtls = {
    downstream_cx_mtls_total: stat(`${l}.downstream_cx_mtls_total`),
    downstream_cx_plaintext_total: stat(`${l}.downstream_cx_plaintext_total`),
    downstream_rq_2xx: stat(`${l}.downstream_rq_2xx`),
  };

  const d = results.direct, m = results.mesh, h = results.haproxy;
  const added = (r: typeof d, p: string) => round(r.latency[p] - d.latency[p], 3);
  const sumCpu = (r: typeof d, keys: string[]) => round(keys.reduce((a, k) => a + r.cpu_s[k], 0));
  const summary = only ? {} : {
    added_latency_ms: {
      mesh: { p50: added(m, "p50_ms"), p90: added(m, "p90_ms"), p99: added(m, "p99_ms") },
      haproxy: { p50: added(h, "p50_ms"), p90: added(h, "p90_ms"), p99: added(h, "p99_ms") },
    },
    ratios: {
      throughput_mesh_vs_direct: round(m.throughput.rps / d.throughput.rps, 3),
      throughput_haproxy_vs_direct: round(h.throughput.rps / d.throughput.rps, 3),
      throughput_mesh_vs_haproxy: round(m.throughput.rps / h.throughput.rps, 3),
      p99_mesh_vs_direct: round(m.latency.p99_ms / d.latency.p99_ms, 3),
      p99_mesh_vs_haproxy: round(m.latency.p99_ms / h.latency.p99_ms, 3),
      added_p99_mesh_vs_haproxy: round(added(m, "p99_ms") / added(h, "p99_ms"), 3),
      cpu_pair_wrk_mesh_vs_haproxy: round(
        sumCpu(m.throughput, ["client_proxy", "server_proxy"]) /
          sumCpu(h.throughput, ["client_haproxy", "server_haproxy"]),
        3,
      ),
      cpu_per_request_wrk_mesh_vs_haproxy: round(
        (sumCpu(m.throughput, ["client_proxy", "server_proxy"]) / m.throughput.rps) /
          (sumCpu(h.throughput, ["client_haproxy", "server_haproxy"]) / h.throughput.rps),
        3,
      ),
      cpu_pair_hey_mesh_vs_haproxy: round(
        sumCpu(m.latency, ["client_proxy", "server_proxy"]) /
          sumCpu(h.latency, ["client_haproxy", "server_haproxy"]),
        3,
      ),
    },
    goals: {
      added_p99_no_worse_than_haproxy: added(m, "p99_ms") <= added(h, "p99_ms"),
      throughput_at_least_0_8_haproxy: m.throughput.rps >= 0.8 * h.throughput.rps,
      rss_at_most_60_mib_per_proxy: Math.max(m.mem_mib.client_proxy.hwm, m.mem_mib.server_proxy.hwm) <= 60,
    },
  };
  const versions = {
    deno: Deno.version.deno,
    haproxy: (await run("haproxy", ["-v"])).split("\n")[0],
    cpus: navigator.hardwareConcurrency,
  };
  console.log(JSON.stringify({
    bench: "proxy_pair",
    concurrency,
    seconds,
    proxy_v8_flags: proxyV8Flags,
    versions,
    mesh_mtls: meshMtls,
    haproxy_refuses_no_client_cert: hapRefusesNoCert,
    ...results,
    ...summary,
  }));
}

try {
  await main();
} finally {
  for (const c of children) {
    try {
      c.kill("SIGKILL");
    } catch {
      // already gone
    }
    await c.status;
  }
  for (const f of cleanups.reverse()) await f().catch(() => {});
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
Deno.exit(0);
