/**
 * Test helpers for meshctl: run the real program as a subprocess, as a user would, against a real
 * meshd and real proxies (subprocesses on loopback).
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "../shared/internal/testing/free_port.ts";
import { processDeadline } from "../shared/internal/testing/deadline.ts";

export { freePort };

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
  const deadline = processDeadline(60_000, `meshctl ${args.join(" ")}`);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-write",
      "--allow-run",
      "--allow-sys",
      MAIN,
      ...args,
    ],
    cwd: ROOT,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...options.env },
    signal: deadline.signal,
  }).spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const r = await child.output();
  deadline.end();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A child process whose stderr and stdout are collected. */
interface Child {
  child: Deno.ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

function spawn(args: string[], env: Record<string, string>): Child {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  let out = "";
  const collect = (s: ReadableStream<Uint8Array>) =>
    s.pipeThrough(new TextDecoderStream()).pipeTo(new WritableStream({ write: (c) => void (out += c) }));
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  return {
    child,
    output: () => out,
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await child.status;
      await reading.catch(() => {});
    },
  };
}

async function until(what: string, child: Child, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) {
      await child.stop();
      throw new Error(`${what} not ready within 30 s; output:\n${child.output()}`);
    }
    await sleep(100);
  }
}

/**
 * The live tests' mesh: httpbin (port 8000 to `http`, 5432 to `tcp`) with the WorkloadEntry
 * httpbin-1 (STRICT, DISABLE on `tcp` and on `unbound`, a port of no service), sleep-1, the
 * WorkloadGroup vm and a GET-only AuthorizationPolicy, all in foo.
 */
export function liveMeshConfig(ports: { http: number; tcp: number; unbound: number }): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports:
  - {name: http, number: 8000, targetPort: ${ports.http}, protocol: HTTP}
  - {name: db, number: 5432, targetPort: ${ports.tcp}, protocol: TCP}
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: 10.1.0.3, labels: {app: sleep}, serviceAccount: sleep}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  mtls: {mode: STRICT}
  portLevelMtls: {${ports.tcp}: {mode: DISABLE}, ${ports.unbound}: {mode: DISABLE}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: vm, namespace: foo}
spec:
  metadata: {labels: {app: vm}}
  template: {serviceAccount: vmsa, ports: {http: 8080}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: get-only, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  rules: [{to: [{operation: {methods: [GET]}}]}]
`;
}

/** A real `meshd discovery` on loopback, its config directory and its ports. */
export interface LiveMeshd {
  dir: string;
  configDir: string;
  ports: { grpc: number; secure: number; http: number; monitoring: number; ctrlz: number };
  /** `--debug-address` for meshctl. */
  debugAddress: string;
  output: () => string;
  stop(): Promise<void>;
}

/**
 * Starts the real meshd program (subprocess) with `config` in its --configDir, `env` added, and
 * `meshConfig` (YAML) as its --meshConfig file (none by default).
 */
export async function startLiveMeshd(
  config: string,
  options: { env?: Record<string, string>; meshConfig?: string } = {},
): Promise<LiveMeshd> {
  const dir = await Deno.makeTempDir({ prefix: "meshctl-live-" });
  const configDir = join(dir, "config");
  await Deno.mkdir(configDir);
  await Deno.writeTextFile(join(configDir, "config.yaml"), config);
  const meshConfig = join(dir, options.meshConfig === undefined ? "no-mesh-config" : "mesh-config.yaml");
  if (options.meshConfig !== undefined) await Deno.writeTextFile(meshConfig, options.meshConfig);
  const ports = {
    grpc: freePort(),
    secure: freePort(),
    http: freePort(),
    monitoring: freePort(),
    ctrlz: freePort(),
  };
  const child = spawn([
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-net",
    "--allow-env",
    "--allow-sys",
    `--allow-run=${Deno.execPath()}`,
    join(ROOT, "meshd/main.ts"),
    "discovery",
    `--configDir=${configDir}`,
    `--meshConfig=${meshConfig}`,
    `--grpcAddr=127.0.0.1:${ports.grpc}`,
    `--secureGRPCAddr=127.0.0.1:${ports.secure}`,
    `--httpAddr=127.0.0.1:${ports.http}`,
    "--httpsAddr=127.0.0.1:0",
    `--monitoringAddr=127.0.0.1:${ports.monitoring}`,
    `--ctrlz_port=${ports.ctrlz}`,
  ], {
    ROOT_CA_DIR: join(dir, "ca"),
    DISCO_DEBOUNCE_AFTER: "50ms",
    DISCO_DEBOUNCE_MAX: "500ms",
    ...options.env,
  });
  const debugAddress = `127.0.0.1:${ports.http}`;
  await until("meshd", child, async () => {
    const r = await fetch(`http://${debugAddress}/debug/mesh`);
    await r.body?.cancel();
    return r.ok;
  });
  return {
    dir,
    configDir,
    ports,
    debugAddress,
    output: child.output,
    stop: async () => {
      await child.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** A bootstrap token for `namespace`/`serviceAccount` from meshd's loopback-only debug endpoint. */
export async function bootstrapToken(
  meshd: LiveMeshd,
  namespace: string,
  serviceAccount: string,
): Promise<string> {
  const res = await fetch(`http://${meshd.debugAddress}/debug/bootstrapToken`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ namespace, serviceAccount }),
  });
  return (await res.json()).token;
}

/** A real proxy (subprocess) of a WorkloadEntry, connected to a live meshd. */
export interface LiveProxy {
  adminPort: number;
  output: () => string;
  stop(): Promise<void>;
}

/**
 * Starts the real proxy program for WorkloadEntry `name` in `namespace`, with a bootstrap token and
 * root certificate that meshctl's own `x workload entry configure` would fetch (meshd's debug port).
 * With `ca`, the proxy gets its certificate (and so its ROOTCA) from that other meshd, and keeps its
 * ADS stream to `meshd` in plain text (`--controlPlaneAuthPolicy NONE`): a proxy of a foreign CA.
 * Inbound ports forward to the application at 127.0.0.1:`app` (default 1: no application).
 */
export async function startLiveProxy(
  meshd: LiveMeshd,
  who: {
    namespace: string;
    name: string;
    serviceAccount: string;
    ip: string;
    inbound: number[];
    ca?: LiveMeshd;
    app?: number;
  },
): Promise<LiveProxy> {
  const ca = who.ca ?? meshd;
  const token = await bootstrapToken(ca, who.namespace, who.serviceAccount);
  const tokenFile = join(meshd.dir, `${who.name}.token`);
  await Deno.writeTextFile(tokenFile, token);
  const rootFile = join(meshd.dir, `${who.name}.root-cert.pem`);
  await Deno.writeTextFile(
    rootFile,
    await (await fetch(`http://${ca.debugAddress}/debug/rootCert`)).text(),
  );
  const adminPort = freePort();
  const child = spawn([
    "run",
    "--allow-read",
    "--allow-env",
    "--allow-net",
    "--allow-sys",
    join(ROOT, "proxy/main.ts"),
    ...(who.ca
      ? [
        `--discoveryAddress=127.0.0.1:${meshd.ports.grpc}`,
        "--controlPlaneAuthPolicy=NONE",
        `--caAddress=127.0.0.1:${who.ca.ports.secure}`,
      ]
      : [`--discoveryAddress=127.0.0.1:${meshd.ports.secure}`]),
    `--namespace=${who.namespace}`,
    `--serviceAccount=${who.serviceAccount}`,
    `--workloadEntry=${who.name}`,
    `--address=${who.ip}`,
    "--inboundBindAddress=127.0.0.1",
    `--tokenFile=${tokenFile}`,
    `--rootCertFile=${rootFile}`,
    ...who.inbound.map((p) => `--inbound=${p}=127.0.0.1:${who.app ?? 1}`),
    `--outbound=127.0.0.1:${freePort()}`,
    `--proxy-admin-port=${adminPort}`,
    "--concurrency=1",
  ], {});
  await until(`proxy ${who.name}`, child, async () => {
    const r = await fetch(`http://127.0.0.1:${adminPort}/ready`);
    await r.body?.cancel();
    return r.status === 200;
  });
  return { adminPort, output: child.output, stop: child.stop };
}
