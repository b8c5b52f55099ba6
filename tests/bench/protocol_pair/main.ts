/**
 * Protocol pair benchmark (issue 16 item 8): one run measures, side by side,
 *
 * - `direct`: the load straight to the app;
 * - `mesh`: the mesh's proxy pair (client proxy → mutual TLS → server proxy, STRICT, as in
 *   ../proxy_pair), both the real `proxy` program against an in-process meshd + CA;
 * - `haproxy`: Debian's haproxy as the same pair (haproxy.ts), certificates from the same CA;
 *
 * under three loads (loads.ts), each bounded in time, all on 127.0.0.x:
 *
 * - `tcp`: iperf3, one stream, for `seconds` (app: `iperf3 -s`), service port `tcp` (TCP);
 * - `h2`: h2load -c16 -m10 (h2c in; app: nghttpd --no-tls), service port `http2` (HTTP2);
 * - `grpc`: unary calls at 1,000/s (grpc_bench.py, python3-grpcio, open loop; app: a grpcio server),
 *   service port `grpc` (GRPC).
 *
 * As root the run re-executes itself in its own network namespace (netns.ts), where nat OUTPUT
 * REDIRECTs the service VIP to the client proxy's outbound port 15001, as a sidecar's capture does: the
 * mesh's clients address `10.227.0.128:<service port>` and the client proxy finds the service from the
 * original destination. Without root there is no capture, and the mesh side is reported unavailable.
 *
 * CPU seconds per process over each load (/proc utime+stime), VmRSS/VmHWM after the loads. A mesh
 * side that cannot carry a protocol is reported as `{"unavailable": "<why>"}`, never as a figure.
 * Prints one JSON line.
 *
 * Run: ./dev deno run -A tests/bench/protocol_pair/main.ts [seconds=10] [concurrency=1]
 * (BENCH_LOADS=tcp,h2,grpc to pick loads; BENCH_GRPC_RATE, default 1000.)
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import {
  BenchRun,
  type Child,
  haproxyPem,
  log,
  measured,
  memMiB,
  type MeshPair,
  proxyV8Flags,
  run,
  runProvenance,
  startMeshPair,
} from "../pair_support.ts";
import { haproxyClientConfig, type HaproxyRoute, haproxyServerConfig } from "./haproxy.ts";
import { grpcBench, grpcLoad, h2load, iperf3 } from "./loads.ts";
import { currentNetns, runInNetns, SERVICE_VIP } from "./netns.ts";
import { probeGrpc, probeH2, probeTcp } from "./probes.ts";
import { summary } from "./summary.ts";

/** The client proxy's outbound port inside the bench's namespace (the sidecar's 15001). */
const OUTBOUND_PORT = 15001;
const netns = currentNetns();
if (netns === undefined && Deno.uid() === 0) {
  Deno.exit(await runInNetns(new URL(import.meta.url).pathname, Deno.args, OUTBOUND_PORT));
}

const seconds = Number(Deno.args[0] ?? 10);
const concurrency = Number(Deno.args[1] ?? 1);
const loads = (Deno.env.get("BENCH_LOADS") ?? "tcp,h2,grpc").split(",");
const grpcRate = Number(Deno.env.get("BENCH_GRPC_RATE") ?? 1000);
const HOST = "app.foo.svc.cluster.local";
/** Service ports (what the client addresses through the mesh). */
const SERVICE = { tcp: 9000, h2: 8080, grpc: 9090 };

const bench = await BenchRun.start("protocol-pair-bench-");

/** The apps, each in its own process on 127.0.0.1. */
async function startApps() {
  const ports = { tcp: freePort(), h2: freePort(), grpc: freePort() };
  const htdocs = join(bench.dir, "htdocs");
  await Deno.mkdir(htdocs);
  await Deno.writeTextFile(join(htdocs, "index.html"), "hello from the app\n");
  const procs = {
    tcp: bench.spawn("iperf3", ["-s", "-B", "127.0.0.1", "-p", String(ports.tcp)]),
    h2: bench.spawn("nghttpd", ["--no-tls", "-a", "127.0.0.1", "-d", htdocs, String(ports.h2)]),
    grpc: bench.spawn(...grpcBench(["serve", String(ports.grpc)])),
  };
  await waitListening(Object.values(ports));
  return { ports, procs };
}

/** Waits (30 s at most) until each port on 127.0.0.1 accepts a connection. */
async function waitListening(ports: number[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (const port of ports) {
    for (;;) {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port}: ${e}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

async function startHaproxy(pair: MeshPair, apps: { tcp: number; h2: number; grpc: number }) {
  const certs = {
    clientPem: await haproxyPem(bench, pair.ca, "hap-client", "sleep"),
    serverPem: await haproxyPem(bench, pair.ca, "hap-server", "app"),
    rootPem: pair.rootPem,
  };
  const route = (name: keyof typeof apps, mode: HaproxyRoute["mode"]): HaproxyRoute => ({
    name,
    mode,
    clientPort: freePort(),
    serverPort: freePort(),
    appPort: apps[name],
  });
  const routes = [route("tcp", "tcp"), route("h2", "h2"), route("grpc", "h2")];
  await Deno.writeTextFile(
    join(bench.dir, "hap-client.cfg"),
    haproxyClientConfig(routes, certs, concurrency),
  );
  await Deno.writeTextFile(
    join(bench.dir, "hap-server.cfg"),
    haproxyServerConfig(routes, certs, concurrency),
  );
  const server = bench.spawn("haproxy", ["-db", "-f", join(bench.dir, "hap-server.cfg")]);
  const client = bench.spawn("haproxy", ["-db", "-f", join(bench.dir, "hap-client.cfg")]);
  await waitListening(routes.map((r) => r.clientPort));
  // The server side must refuse a client without a certificate, else the pair is not mutual TLS.
  const noCert = await new Deno.Command("openssl", {
    args: ["s_client", "-connect", `127.0.0.1:${routes[0].serverPort}`, "-quiet", "-verify_quiet"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = noCert.stdin.getWriter();
  await w.write(new TextEncoder().encode("x"));
  await w.close();
  const refused = !(await noCert.output()).success;
  return {
    client,
    server,
    refusesNoClientCert: refused,
    port: Object.fromEntries(routes.map((r) => [r.name, r.clientPort])) as Record<keyof typeof apps, number>,
  };
}

type Pids = Record<string, number>;
interface Target {
  host?: string;
  port?: number;
  unavailable?: string;
  pids: Pids;
}

async function runLoad(
  name: string,
  targets: Record<string, Target>,
  // deno-lint-ignore no-explicit-any
  load: (host: string, port: number) => Promise<any>,
) {
  // deno-lint-ignore no-explicit-any
  const out: Record<string, any> = {};
  for (const [side, t] of Object.entries(targets)) {
    if (t.port === undefined) {
      out[side] = { unavailable: t.unavailable };
      continue;
    }
    log(`${name}: ${side}`);
    out[side] = await measured(t.pids, () => load(t.host ?? "127.0.0.1", t.port!));
    await new Promise((r) => setTimeout(r, 500));
  }
  return out;
}

async function main() {
  const apps = await startApps();
  const inbound = { tcp: freePort(), h2: freePort(), grpc: freePort() };
  const pair = await startMeshPair(bench, [
    { name: "tcp", number: SERVICE.tcp, targetPort: inbound.tcp, protocol: "TCP", appPort: apps.ports.tcp },
    { name: "http2", number: SERVICE.h2, targetPort: inbound.h2, protocol: "HTTP2", appPort: apps.ports.h2 },
    {
      name: "grpc",
      number: SERVICE.grpc,
      targetPort: inbound.grpc,
      protocol: "GRPC",
      appPort: apps.ports.grpc,
    },
  ], {
    concurrency,
    v8Flags: proxyV8Flags(),
    ...(netns ? { outboundPort: netns.outboundPort, addresses: [SERVICE_VIP] } : {}),
  });
  const hap = await startHaproxy(pair, apps.ports);
  const meshPids = { client_proxy: pair.clientProxy.pid, server_proxy: pair.serverProxy.pid };
  const hapPids = { client_haproxy: hap.client.pid, server_haproxy: hap.server.pid };
  const idleMem = { client_proxy: memMiB(pair.clientProxy.pid), server_proxy: memMiB(pair.serverProxy.pid) };
  const noCapture = "not root: no network namespace with the sidecar's capture (iptables REDIRECT) to run in";
  const mesh = netns
    ? {
      tcp: await probeTcp(SERVICE_VIP, SERVICE.tcp),
      h2: await probeH2(`http://${SERVICE_VIP}:${SERVICE.h2}/index.html`, `${HOST}:${SERVICE.h2}`),
      grpc: await probeGrpc(`${SERVICE_VIP}:${SERVICE.grpc}`, `${HOST}:${SERVICE.grpc}`),
    }
    : { tcp: noCapture, h2: noCapture, grpc: noCapture };
  const targets = (load: keyof typeof apps.ports, app: Child): Record<string, Target> => ({
    direct: { port: apps.ports[load], pids: { app: app.pid } },
    haproxy: { port: hap.port[load], pids: { app: app.pid, ...hapPids } },
    mesh: mesh[load] === undefined
      ? { host: SERVICE_VIP, port: SERVICE[load], pids: { app: app.pid, ...meshPids } }
      : { unavailable: mesh[load], pids: {} },
  });
  // deno-lint-ignore no-explicit-any
  const results: Record<string, any> = {};
  if (loads.includes("tcp")) {
    results.tcp = await runLoad(
      "tcp (iperf3)",
      targets("tcp", apps.procs.tcp),
      (h, p) => iperf3(h, p, seconds),
    );
  }
  if (loads.includes("h2")) {
    results.h2 = await runLoad(
      "h2 (h2load)",
      targets("h2", apps.procs.h2),
      (h, p) => h2load(`http://${h}:${p}/index.html`, `${HOST}:${SERVICE.h2}`, seconds),
    );
  }
  if (loads.includes("grpc")) {
    results.grpc = await runLoad(
      `grpc unary at ${grpcRate}/s`,
      targets("grpc", apps.procs.grpc),
      (h, p) => grpcLoad(h, p, `${HOST}:${SERVICE.grpc}`, grpcRate, seconds),
    );
  }
  // Evidence that the mesh hop was mutual TLS: the client proxy's upstream mTLS/plain-text counters, and
  // the service's TCP clusters.
  const stats = await (await fetch(`http://127.0.0.1:${pair.clientAdmin}/stats`)).text();
  const meshTls = Object.fromEntries(
    stats.split("\n").filter((l) =>
      /upstream_cx_(mtls|plaintext)_total: /.test(l) || (l.startsWith("tcp.") && l.includes(HOST))
    ).map((l) => {
      const i = l.lastIndexOf(": ");
      return [l.slice(0, i), Number(l.slice(i + 2))];
    }),
  );
  const mem = {
    mesh_idle: idleMem,
    mesh: { client_proxy: memMiB(pair.clientProxy.pid), server_proxy: memMiB(pair.serverProxy.pid) },
    haproxy: { client: memMiB(hap.client.pid), server: memMiB(hap.server.pid) },
  };
  console.log(JSON.stringify({
    bench: "protocol_pair",
    ...await runProvenance(
      ["tests/bench/protocol_pair/main.ts", ...Deno.args],
      ["BENCH_NETNS", "BENCH_OUTBOUND_PORT"],
    ),
    seconds,
    concurrency,
    grpc_rate: grpcRate,
    netns: netns?.name ?? null,
    proxy_v8_flags: proxyV8Flags(),
    versions: {
      deno: Deno.version.deno,
      haproxy: (await run("haproxy", ["-v"])).split("\n")[0],
      iperf3: (await run("iperf3", ["-v"])).split("\n")[0],
      cpus: navigator.hardwareConcurrency,
      grpc_load_client: "tests/bench/protocol_pair/grpc_bench.py (python3-grpcio, asyncio, open loop)",
    },
    haproxy_refuses_no_client_cert: hap.refusesNoClientCert,
    mesh_client_proxy_tls_counters: meshTls,
    // An HTTP/2 or gRPC load the client proxy carried as opaque TCP (its tcp.<cluster> counters moved)
    // is an L4 relay, not comparable with haproxy's HTTP/2 mode, which handles each request.
    mesh_path: Object.fromEntries((["h2", "grpc"] as const).map((load) => [
      load,
      (meshTls[`tcp.outbound|${SERVICE[load]}||${HOST}.downstream_cx_total`] ?? 0) > 0
        ? "tcp (opaque L4 relay: not comparable with haproxy's HTTP/2 mode)"
        : "http2",
    ])),
    mesh_unavailable: Object.fromEntries(Object.entries(mesh).filter(([, v]) => v !== undefined)),
    ...results,
    mem_mib: mem,
    summary: summary(results),
  }));
}

try {
  await main();
} finally {
  await bench.close();
}
Deno.exit(0);
