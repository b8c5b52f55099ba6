/**
 * Proxy pair benchmark (proxy issue, "Benchmark"; issue 17 item 5): one run compares
 *
 * - `direct`: wrk/hey straight to a local HTTP app (a Deno.serve echo app in its own process);
 * - `mesh`: a client `proxy` (--outbound) and a server `proxy` (--inbound) with automatic mutual TLS
 *   (STRICT PeerAuthentication, so plain text cannot pass unnoticed), the app reached as the service
 *   `app.foo.svc.cluster.local:8000` through the client proxy (redirected request, routed by Host);
 *   both proxies are the real program as subprocesses against an in-process meshd + CA;
 * - `haproxy`: Debian's haproxy in the same two roles (client side: plain HTTP in, TLS with a client
 *   certificate out; server side: TLS with client-certificate verification in, plain HTTP to the app),
 *   certificates signed by the same test CA;
 * - the floors `node_tls` and `deno_tls` (../floors): TLS pass-through pairs with no HTTP and no policy,
 *   each side its own process with the proxy's V8 flags, what the runtime itself costs.
 *
 * Loads (loopback only, bounded in time): wrk -c50 -t2 -d10s keep-alive (maximum throughput), and
 * hey -z 10s -c 16 -q 63 POST with a 1 KiB body (about 1,000 req/s: p50/p90/p99). CPU seconds per
 * process over each load run (/proc/<pid>/stat utime+stime), RSS (VmRSS, VmHWM) before and after.
 * Prints one JSON line (fields are only added, never renamed: other benches and helpers read it); its
 * `headline` is each pair's CPU per request with the mesh ÷ HAProxy ratio and VmHWM per process, and
 * `vs_floors` every mesh figure ÷ each floor's. The headline also goes to stderr as text.
 *
 * Run: ./dev deno run -A tests/bench/proxy_pair/main.ts [concurrency=1] [seconds=10]
 * (concurrency: the proxies' --concurrency and haproxy's nbthread; BENCH_TARGETS, BENCH_PROXY_V8_FLAGS.)
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import {
  adminStat,
  BenchRun,
  haproxyPem,
  log,
  measured,
  memMiB,
  meshTlsArgs,
  proxyV8Flags as benchProxyV8Flags,
  round,
  run,
  runProvenance,
  startMeshPair,
  waitHttp,
} from "../pair_support.ts";
import { FLOOR_KINDS, startFloorPair } from "../floors/pair.ts";
import { hey, wrk } from "./loads.ts";
import { headline, headlineText, versusFloors } from "./summary.ts";

const concurrency = Number(Deno.args[0] ?? 1);
const seconds = Number(Deno.args[1] ?? 10);
/**
 * Which targets to load (BENCH_TARGETS=mesh,haproxy for a quicker run; names: direct, mesh, haproxy,
 * node_tls, deno_tls); all five by default.
 */
const only = Deno.env.get("BENCH_TARGETS")?.split(",");
/** The `proxy` task's `--v8-flags` (deno.json), or BENCH_PROXY_V8_FLAGS for experiments. */
const proxyV8Flags = benchProxyV8Flags();
const HOST = "app.foo.svc.cluster.local:8000";

const bench = await BenchRun.start("proxy-pair-bench-");
const dir = bench.dir;
const spawn = bench.spawn.bind(bench);

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
  const inboundPort = freePort();
  const { ca, rootPem, clientProxy, serverProxy, serverAdmin, outboundPort } = await startMeshPair(
    bench,
    [{ name: "http", number: 8000, targetPort: inboundPort, protocol: "HTTP", appPort }],
    { concurrency, v8Flags: proxyV8Flags, clientArgs: meshTlsArgs() },
  );
  const meshUrl = `http://127.0.0.1:${outboundPort}/`;
  await waitHttp(meshUrl, HOST, "the app through the proxy pair").catch((e) => {
    throw new Error(`${e.message}\nclient proxy: ${clientProxy.tail}\nserver proxy: ${serverProxy.tail}`);
  });

  // The haproxy pair.
  const hapServerPem = await haproxyPem(bench, ca, "hap-server", "app");
  const hapClientPem = await haproxyPem(bench, ca, "hap-client", "sleep");
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

  // The floors: TLS pass-through pairs with no HTTP and no policy, same certificates' CA, same V8 flags.
  const floors: Record<string, { url: string; pids: Record<string, number> }> = {};
  for (const kind of FLOOR_KINDS) {
    if (only && !only.includes(kind)) continue;
    const floor = await startFloorPair(bench, kind, { ca, rootPem, appPort, v8Flags: proxyV8Flags });
    const url = `http://127.0.0.1:${floor.clientPort}/`;
    await waitHttp(url, HOST, `the app through the ${kind} floor`);
    floors[kind] = {
      url,
      pids: { app: appProc.pid, client_pipe: floor.client.pid, server_pipe: floor.server.pid },
    };
  }

  const targets: Record<string, { url: string; pids: Record<string, number> }> = {
    direct: { url: `http://127.0.0.1:${appPort}/`, pids: { app: appProc.pid } },
    mesh: {
      url: meshUrl,
      pids: { app: appProc.pid, client_proxy: clientProxy.pid, server_proxy: serverProxy.pid },
    },
    haproxy: {
      url: hapUrl,
      pids: { app: appProc.pid, client_haproxy: hapClient.pid, server_haproxy: hapServer.pid },
    },
    ...floors,
  };
  // deno-lint-ignore no-explicit-any
  const results: Record<string, any> = {};
  const idleMem = Object.fromEntries(
    Object.entries(targets).map(([name, t]) => [
      name,
      Object.fromEntries(Object.entries(t.pids).filter(([k]) => k !== "app").map(([k, p]) => [k, memMiB(p)])),
    ]),
  );
  for (const [name, t] of Object.entries(targets)) {
    if (only && !only.includes(name)) continue;
    log(`${name}: wrk`);
    const throughput = await measured(t.pids, () => wrk(t.url, HOST, seconds));
    await new Promise((r) => setTimeout(r, 1000));
    log(`${name}: hey`);
    const latency = await measured(t.pids, () => hey(t.url, HOST, seconds, body));
    const mem = Object.fromEntries(
      Object.entries(t.pids).filter(([k]) => k !== "app").map(([k, p]) => [k, memMiB(p)]),
    );
    results[name] = {
      throughput,
      latency,
      mem_mib: mem,
      ...(name === "direct" ? {} : { idle_mem_mib: idleMem[name] }),
    };
    await new Promise((r) => setTimeout(r, 1000));
  }

  // Evidence that the mesh path really was mutual TLS.
  const l = `listener.127.0.0.1_${inboundPort}`;
  const meshMtls = {
    downstream_cx_mtls_total: await adminStat(serverAdmin, `${l}.downstream_cx_mtls_total`),
    downstream_cx_plaintext_total: await adminStat(serverAdmin, `${l}.downstream_cx_plaintext_total`),
    downstream_rq_2xx: await adminStat(serverAdmin, `${l}.downstream_rq_2xx`),
  };

  const d = results.direct, m = results.mesh, h = results.haproxy;
  const added = (r: typeof d, p: string) => round(r.latency[p] - d.latency[p], 3);
  const sumCpu = (r: typeof d, keys: string[]) => round(keys.reduce((a, k) => a + r.cpu_s[k], 0));
  const summary = !d || !m || !h ? {} : {
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
  const provenance = await runProvenance(["tests/bench/proxy_pair/main.ts", ...Deno.args]);
  log(headlineText(results, `${provenance.commit}: ${provenance.command}`));
  console.log(JSON.stringify({
    bench: "proxy_pair",
    ...provenance,
    headline: headline(results),
    vs_floors: versusFloors(results),
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
  await bench.close();
}
Deno.exit(0);
