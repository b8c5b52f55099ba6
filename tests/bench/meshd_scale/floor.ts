/**
 * The floor of meshd's policy push (README.md "Floor"): the scale bench's simulated proxies against
 * floor_server.ts, a bare grpc-js ADS server that writes one shared pre-encoded response per stream
 * and does nothing else. Its CPU per push is what grpc-js and Deno's node:http2 cost for N streams;
 * meshd's (main.ts) minus this is meshd's own.
 *
 * Run: ./dev deno run -A tests/bench/meshd_scale/floor.ts [1k|10k|<n>] (BENCH_POLICY_CHANGES pushes,
 * default 5; BENCH_CLIENT_PROCS, BENCH_STREAMS_PER_CONNECTION, BENCH_TIMEOUT_S as main.ts). Prints
 * one JSON line: per push the server's CPU seconds and the clients' p99.
 *
 * @module
 */
import { TYPES } from "./client.ts";
import { all, type ClientProcess, percentiles, spawnClient } from "./client_process.ts";
import { cpuOf, memoryOf } from "./meshd_process.ts";

const SIZES: Record<string, number> = { "1k": 1000, "10k": 10_000, "25k": 25_000 };
const clients = SIZES[Deno.args[0] ?? "1k"] ?? Number(Deno.args[0]);
const env = (name: string, fallback: number) => Number(Deno.env.get(name) ?? fallback);
const procs = env("BENCH_CLIENT_PROCS", Math.ceil(clients / 6250));
const perSession = env("BENCH_STREAMS_PER_CONNECTION", 1000);
const phaseMs = env("BENCH_TIMEOUT_S", 300) * 1000;
const changes = env("BENCH_POLICY_CHANGES", 5);
if (!Number.isInteger(clients) || clients < 1) throw new Error(`clients: ${Deno.args[0]} is not a count`);

const server = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL("./floor_server.ts", import.meta.url).pathname],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const spawned: ClientProcess[] = [];
try {
  const first = await server.stdout.pipeThrough(new TextDecoderStream()).getReader().read();
  const port = JSON.parse(first.value!.split("\n")[0]).port as number;
  const stdin = server.stdin.getWriter();
  const per = Math.ceil(clients / procs);
  const expect = Object.fromEntries(TYPES.map((t) => [t, 1]));
  for (let first = 0; first < clients; first += per) {
    spawned.push(spawnClient({ port, first, count: Math.min(per, clients - first), perSession, expect }));
  }
  const sync = await all(spawned, "synced", phaseMs);
  const pushes: { serverCpuSeconds: number; clientP99Ms: number; missing: number }[] = [];
  for (let i = 0; i < changes; i++) {
    await new Promise((r) => setTimeout(r, 500));
    for (const c of spawned) await c.send("arm");
    await Promise.all(spawned.map((c) => c.next("armed", 30_000)));
    const cpu = cpuOf(server.pid);
    const at = Date.now();
    await stdin.write(new TextEncoder().encode("push\n"));
    const conv = await all(spawned, "converged", phaseMs);
    // The ACKs are part of a push's cost: wait until the server is idle again.
    await new Promise((r) => setTimeout(r, 300));
    const p = percentiles(conv.times.map((t) => (t === 0 ? -1 : t - at)));
    pushes.push({
      serverCpuSeconds: Number((cpuOf(server.pid) - cpu).toFixed(2)),
      clientP99Ms: p.p99,
      missing: p.missing,
    });
  }
  console.log(JSON.stringify({
    clients,
    synced: clients - percentiles(sync.times.map((t) => (t === 0 ? -1 : t))).missing,
    pushes,
    serverHwmMiB: Math.round(memoryOf(server.pid).hwmMiB),
  }));
} finally {
  for (const c of spawned) await c.kill();
  server.kill("SIGKILL");
  await server.status;
}
Deno.exit(0);
