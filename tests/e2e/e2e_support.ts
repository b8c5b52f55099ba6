/**
 * Helpers of the end-to-end tests.
 *
 * @module
 */
import { join } from "node:path";
import assert from "node:assert/strict";
import { type Meshd, startCa, startMeshd, waitFor } from "../integration/meshd_support.ts";
import { Httpbin } from "../../proxy/inbound/test_support.ts";
import { type ProxyProcess, startProxyProcess } from "../../proxy/test_support.ts";
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import { processDeadline, within } from "../../shared/internal/testing/deadline.ts";

/**
 * Polls `check` every 50 ms until it returns undefined (success) or `timeoutMs` passes.
 *
 * @param check returns undefined when satisfied, else what is still wrong
 * @throws Error naming `what` and the last problem after the timeout
 */
export async function eventually(
  what: string,
  check: () => Promise<string | undefined>,
  timeoutMs = 4000,
): Promise<void> {
  const start = Date.now();
  for (;;) {
    const problem = await check();
    if (problem === undefined) return;
    if (Date.now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms: ${problem}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** meshd with its CA, httpbin behind its sidecar, and an ingress gateway proxy: all real, on loopback. */
export interface GatewayMesh {
  /** The test's temp directory (removed by stop). */
  dir: string;
  /** meshd's config directory. */
  config: string;
  meshd: Meshd;
  /** httpbin's sidecar (workload foo/httpbin-1, labels app=httpbin). */
  sidecar: ProxyProcess;
  /** The gateway proxy (workload mesh-system/ingressgateway-1, labels istio=ingressgateway). */
  gateway: ProxyProcess;
  /** Prints the proxies' recent stderr (after a failure). */
  dumpLogs(): void;
  /** Stops everything and removes the directory. */
  stop(): Promise<void>;
}

/**
 * Starts a {@link GatewayMesh} with `files` (name → YAML) in meshd's config directory.
 *
 * @param ips where httpbin's sidecar and the gateway listen (loopback addresses)
 * @param options meshd's mesh config data-path settings (default shared's defaults), and its serving
 *   child processes (default 0: served in the test process)
 */
export async function startGatewayMesh(
  files: Record<string, string>,
  ips: { httpbin: string; gateway: string },
  options: { proxySettings?: ProxySettings; servingChildren?: number } = {},
): Promise<GatewayMesh> {
  const dir = await Deno.makeTempDir({ prefix: "gateway-e2e-" });
  const config = join(dir, "config");
  await Deno.mkdir(config);
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(config, name), text);
  const ca = await startCa(join(dir, "ca"));
  const meshd = await startMeshd(config, {
    ca,
    proxySettings: options.proxySettings,
    servingChildren: options.servingChildren,
  });
  await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
  const app = await Httpbin.start();
  const procs: ProxyProcess[] = [];
  const stop = async () => {
    for (const p of procs) await p.stop();
    await app.stop();
    await meshd.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const common = { dir, ca, discoveryAddress: `127.0.0.1:${meshd.securePort}` };
    procs.push(
      await startProxyProcess({
        ...common,
        namespace: "foo",
        serviceAccount: "httpbin",
        workloadEntry: "httpbin-1",
        address: ips.httpbin,
        labels: "app=httpbin",
        args: [`--inbound=8080=127.0.0.1:${app.port}`],
      }),
      await startProxyProcess({
        ...common,
        namespace: "mesh-system",
        serviceAccount: "ingressgateway",
        workloadEntry: "ingressgateway-1",
        address: ips.gateway,
        labels: "istio=ingressgateway",
        args: ["--type=router"],
      }),
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    dir,
    config,
    meshd,
    sidecar: procs[0],
    gateway: procs[1],
    dumpLogs: () => {
      for (const p of procs) console.error(p.stderr().slice(-3000));
    },
    stop,
  };
}

/**
 * The services of a {@link GatewayMesh}: httpbin (port 8000 → 8080) with its WorkloadEntry, and the
 * ingress gateway's service, whose `ports` map the Gateway ports to where the gateway proxy listens.
 */
export function gatewayMeshServices(
  ips: { httpbin: string; gateway: string },
  ports: { name: string; number: number; protocol: string; targetPort: number }[],
): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, protocol: HTTP, targetPort: 8080}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: ${ips.httpbin}, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ingressgateway, namespace: mesh-system}
spec:
  hosts: [ingressgateway.mesh-system.svc.cluster.local]
  ports: ${JSON.stringify(ports)}
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {istio: ingressgateway}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: ingressgateway-1, namespace: mesh-system}
spec: {address: ${ips.gateway}, labels: {istio: ingressgateway}, serviceAccount: ingressgateway}
`;
}

/**
 * Runs `meshctl <args>` as a process (deno run meshctl/main.ts).
 *
 * @returns its exit code, stdout and stderr
 */
export async function runMeshctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const deadline = processDeadline(60_000, `meshctl ${args.join(" ")}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../meshctl/main.ts", import.meta.url).pathname, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
    signal: deadline.signal,
  }).output();
  deadline.end();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** A `meshd discovery` process. */
export interface MeshdProcess {
  child: Deno.ChildProcess;
  /** Everything it logged so far. */
  output(): string;
  /** Kills it (SIGKILL) unless it has exited, and waits for its end and the rest of its output. */
  stop(): Promise<void>;
}

/**
 * `meshd discovery` as a process (`dir/config` its config directory, `dir/ca` its ROOT_CA_DIR), with
 * plain-text ADS on `port` and every other port free unless `options` names it; ready once it logs
 * `options.ready` (default: that ADS listens) within `options.timeoutMs` (default 20 s).
 *
 * @param extra more flags, e.g. `--grpcTransport children`
 * @param options fixed ports for the secure gRPC, debug HTTP and monitoring servers, and env added
 * @throws AssertionError when meshd exits while starting; Error when it is not ready in time (then killed)
 */
export async function startMeshdProcess(
  dir: string,
  port: number,
  extra: string[] = [],
  options: {
    ports?: { secure?: number; http?: number; monitoring?: number };
    env?: Record<string, string>;
    ready?: string;
    timeoutMs?: number;
  } = {},
): Promise<MeshdProcess> {
  const { secure = 0, http = 0, monitoring = 0 } = options.ports ?? {};
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../meshd/main.ts", import.meta.url).pathname,
      "discovery",
      ...["--configDir", `${dir}/config`, "--meshConfig", `${dir}/no-mesh-config`],
      ...["--grpcAddr", `127.0.0.1:${port}`, "--secureGRPCAddr", `127.0.0.1:${secure}`],
      ...["--httpsAddr", "127.0.0.1:0"],
      ...["--httpAddr", `127.0.0.1:${http}`, "--monitoringAddr", `127.0.0.1:${monitoring}`],
      ...["--ctrlz_port", "0", ...extra],
    ],
    env: { NO_COLOR: "1", ROOT_CA_DIR: `${dir}/ca`, ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const sink = () => new WritableStream<string>({ write: (chunk) => void (out += chunk) });
  const reading = Promise.all([
    child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(sink()).catch(() => {}),
    child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(sink()).catch(() => {}),
  ]);
  let exited = false;
  child.status.then(() => (exited = true));
  const stop = async () => {
    if (!exited) child.kill("SIGKILL");
    await child.status;
    await within(reading, 10_000, "the end of meshd's output (a child of meshd holding its pipes?)");
  };
  const ready = options.ready ?? "ADS listening";
  try {
    await waitFor(() => exited || out.includes(ready), options.timeoutMs ?? 20_000, "meshd to start");
  } catch (e) {
    await stop();
    throw new Error(`${e instanceof Error ? e.message : e}:\n${out}`);
  }
  assert.ok(!exited, `meshd exited at start:\n${out}`);
  return { child, output: () => out, stop };
}
