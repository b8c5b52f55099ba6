/**
 * Scale benchmark of meshd (meshd issue, "Benchmark"): 1,000 services and N simulated ADS clients
 * (one process holding N delta streams over several HTTP/2 connections). Measures meshd's RSS, the
 * time until every client holds its initial config, and the convergence time of every client after
 * one AuthorizationPolicy change (p50/p99). Goal: 10,000 clients under 2 GB RSS, p99 convergence
 * under 1 s. Istio's anchor: 1 vCPU and 1.5 GB for 1,000 services and 2,000 sidecars.
 *
 * Run: ./dev deno run -A tests/bench/meshd_scale/main.ts [clients=1000] [services=1000]
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { adsProtocol } from "../../../shared/internal/xds/envoy_protos.ts";
import { TYPE_URLS } from "../../../meshd/xds/generators.ts";

const clients = Number(Deno.args[0] ?? 1000);
const services = Number(Deno.args[1] ?? 1000);
const STREAMS_PER_CHANNEL = 500;

function config(): string {
  const docs: string[] = [];
  for (let i = 0; i < services; i++) {
    docs.push(`apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: svc-${i}, namespace: ns-${i % 50}}
spec:
  hosts: [svc-${i}.ns-${i % 50}.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8080, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: svc-${i}}}
---
apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: svc-${i}-1, namespace: ns-${i % 50}}
spec: {address: 10.${(i >> 8) & 255}.${i & 255}.1, labels: {app: svc-${i}}, serviceAccount: svc-${i}}`);
  }
  for (let i = 0; i < clients; i++) {
    docs.push(`apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: client-${i}, namespace: bench}
spec: {address: 10.200.${(i >> 8) & 255}.${i & 255}, labels: {app: client}, serviceAccount: client}`);
  }
  return docs.join("\n---\n") + "\n";
}

const policy = (n: number) =>
  `apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: {name: bench-policy, namespace: bench}
spec:
  selector: {matchLabels: {app: client}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/deny-${n}"], ports: ["8080"]}}]}]
`;

/** RSS of meshd and of its serving children (MESHD_SERVING_CHILDREN), MiB. */
function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const own = Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
  // Children are listed under the thread that spawned them.
  const children = [...Deno.readDirSync(`/proc/${pid}/task`)].flatMap((t) =>
    Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/children`).trim().split(/\s+/).filter(Boolean)
  );
  return own + children.map(Number).reduce((sum, child) => sum + rssMiB(child), 0);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const dir = await Deno.makeTempDir();
// Config files stay under meshd's 4 MiB per-file limit: one file per 200 services.
const all = config().split("\n---\n");
for (let i = 0; i < all.length; i += 400) {
  await Deno.writeTextFile(`${dir}/config-${i}.yaml`, all.slice(i, i + 400).join("\n---\n") + "\n");
}
await Deno.writeTextFile(`${dir}/policy.yaml`, policy(0));

const server = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    ...(Deno.env.get("BENCH_PROFILE")
      ? ["--cpu-prof", `--cpu-prof-dir=${Deno.env.get("BENCH_PROFILE")}`]
      : []),
    new URL("./server.ts", import.meta.url).pathname,
    dir,
  ],
  // BENCH_SERVER_ENV="A=1 B=2" passes variables to meshd only (allocator experiments).
  env: Object.fromEntries(
    (Deno.env.get("BENCH_SERVER_ENV") ?? "").split(" ").filter((kv) => kv.includes("=")).map((kv) =>
      kv.split("=", 2) as [string, string]
    ),
  ),
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
let out = "";
while (!/port \d+/.test(out)) out += (await reader.read()).value ?? "";
const port = Number(/port (\d+)/.exec(out)![1]);
const idleRss = rssMiB(server.pid);

// deno-lint-ignore no-explicit-any
type Msg = Record<string, any>;
const channels: grpc.Client[] = [];
const received = new Array<number>(clients).fill(0);
const policyVersionAt = new Array<number>(clients).fill(0);
let wantPolicy = "";
const t0 = performance.now();
for (let i = 0; i < clients; i++) {
  if (i % STREAMS_PER_CHANNEL === 0) {
    channels.push(
      new (adsProtocol().client)(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
        "grpc.max_receive_message_length": 64 * 1024 * 1024,
      }),
    );
  }
  const call = (channels.at(-1) as Msg).DeltaAggregatedResources();
  call.on("data", (m: Msg) => {
    received[i]++;
    if (m.typeUrl === TYPE_URLS.authorization && wantPolicy !== "") {
      if (m.resources.some((r: Msg) => r.version === wantPolicy || r.name === "bench/bench-policy")) {
        policyVersionAt[i] = performance.now();
      }
    }
    call.write({ typeUrl: m.typeUrl, responseNonce: m.nonce });
  });
  call.on("error", () => {});
  const node = {
    id: `sidecar~10.200.${(i >> 8) & 255}.${i & 255}~client-${i}.bench~bench.svc.cluster.local`,
  };
  call.write({ node, typeUrl: TYPE_URLS.service });
  call.write({ typeUrl: TYPE_URLS.workload });
  call.write({ typeUrl: TYPE_URLS.authorization });
}
const deadline = Date.now() + 600_000;
while (received.some((n) => n < 3) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
const initialSyncS = (performance.now() - t0) / 1000;
const syncedRss = rssMiB(server.pid);

// Let the connect-triggered pushes settle, then change one policy that selects every client.
await new Promise((r) => setTimeout(r, 2000));
wantPolicy = "any";
policyVersionAt.fill(0);
const changedAt = performance.now();
await Deno.writeTextFile(`${dir}/policy.yaml`, policy(1));
while (policyVersionAt.some((t) => t === 0) && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
}
const convergence = policyVersionAt.map((t) => t - changedAt);
const peakRss = rssMiB(server.pid);

console.log(JSON.stringify({
  clients,
  services,
  meshdRssMiB: { idle: Math.round(idleRss), synced: Math.round(syncedRss), afterPush: Math.round(peakRss) },
  initialSyncSeconds: Number(initialSyncS.toFixed(2)),
  convergenceMs: {
    p50: Math.round(percentile(convergence, 50)),
    p99: Math.round(percentile(convergence, 99)),
    max: Math.round(Math.max(...convergence)),
  },
  converged: convergence.filter((c) => c >= 0).length,
}));
for (const c of channels) c.close();
server.kill("SIGTERM");
await server.status;
await Deno.remove(dir, { recursive: true });
Deno.exit(0);
