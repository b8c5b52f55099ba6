/**
 * meshd's generation cost per push with and without the xDS cache (meshd/xds/xds_cache.ts), without
 * gRPC: the scale bench's mesh (1,000 services, N client workloads in one namespace, one
 * AuthorizationPolicy selecting them all), six pushes that each change the policy, and for every
 * client the Service, Workload and Authorization lists its stream would ask for. Prints the push
 * context build and the generation, wall and CPU milliseconds (CPU from /proc/self/stat: the figure
 * that survives a shared machine).
 *
 * Run: ./dev deno run -A tests/bench/xds_cache/main.ts [clients=10000] [on|off]
 *
 * @module
 */
import { buildPushContext, type ConfigResource } from "../../../meshd/push_context/push_context.ts";
import { configResource as res } from "../../../meshd/push_context/test_support.ts";
import { PushContextGenerator, TYPE_URLS } from "../../../meshd/xds/generators.ts";

const clients = Number(Deno.args[0] ?? 10_000);
const cache = (Deno.args[1] ?? "on") !== "off";

const config: ConfigResource[] = [];
for (let i = 0; i < 1000; i++) {
  const ns = `ns-${i % 50}`;
  config.push(
    res("ServiceEntry", ns, `svc-${i}`, {
      hosts: [`svc-${i}.${ns}.svc.cluster.local`],
      ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      workloadSelector: { labels: { app: `svc-${i}` } },
    }),
    res("WorkloadEntry", ns, `svc-${i}-1`, {
      address: `10.${(i >> 8) & 255}.${i & 255}.1`,
      labels: { app: `svc-${i}` },
      serviceAccount: `svc-${i}`,
    }),
  );
}
for (let i = 0; i < clients; i++) {
  config.push(res("WorkloadEntry", "bench", `client-${i}`, {
    address: `10.200.${(i >> 8) & 255}.${i & 255}`,
    labels: { app: "client" },
    serviceAccount: "client",
  }));
}
const policy = (n: number) =>
  res("AuthorizationPolicy", "bench", "bench-policy", {
    selector: { matchLabels: { app: "client" } },
    action: "DENY",
    rules: [{ to: [{ operation: { paths: [`/deny-${n}`], ports: ["8080"] } }] }],
  });

/** This process's user+system CPU, ms (clock ticks of 10 ms). */
function cpuMs(): number {
  const fields = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const connected = new Set(Array.from({ length: clients }, (_, i) => `bench/client-${i}`));
const nodes = Array.from({ length: clients }, (_, i) => ({
  id: `sidecar~10.200.0.0~client-${i}.bench~bench.svc.cluster.local`,
  cluster: "",
  metadata: {},
}));
let generator: PushContextGenerator | undefined;
for (let push = 0; push < 6; push++) {
  const [c0, t0] = [cpuMs(), performance.now()];
  const ctx = buildPushContext([...config, policy(push)], { version: `${push}`, connected });
  const [c1, t1] = [cpuMs(), performance.now()];
  if (generator) generator.update(ctx);
  else generator = new PushContextGenerator(ctx, { enabled: cache });
  for (const node of nodes) {
    for (const type of [TYPE_URLS.service, TYPE_URLS.workload, TYPE_URLS.authorization]) {
      generator.generate(node, type);
    }
  }
  const [c2, t2] = [cpuMs(), performance.now()];
  console.log(JSON.stringify({
    cache,
    clients,
    push,
    buildMs: Math.round(t1 - t0),
    buildCpuMs: c1 - c0,
    generateMs: Math.round(t2 - t1),
    generateCpuMs: c2 - c1,
  }));
}
