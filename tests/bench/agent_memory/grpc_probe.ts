/**
 * What a gRPC application probe (`proxy/status/app_probe.ts`) adds to the process that runs it: a child
 * per checkout imports app_probe.ts, reads VmRSS after GCs, runs three `grpc.health.v1.Health/Check`
 * probes against a grpc-js health server (in this process, so the child loads only what the probe
 * loads), and reads VmRSS again. Interleaved over the checkouts given. MiB; only differences within a
 * run mean anything. In the proxy the codec and node:tls are loaded by the data path already, so the
 * figure that counts there is the increase, not the import.
 *
 * Run: `./dev deno run -A tests/bench/agent_memory/grpc_probe.ts [rounds] <checkout>...`
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { ChildScript } from "./child_runner.ts";

const CHILD = `
const [port] = Deno.args;
const rss = async () => {
  for (let i = 0; i < 3; i++) { globalThis.gc?.(); await new Promise((r) => setTimeout(r, 200)); }
  const s = await Deno.readTextFile("/proc/self/status");
  return Number(/VmRSS:\\s+(\\d+)/.exec(s)[1]) / 1024;
};
const { runAppProbe } = await import(\`\${Deno.cwd()}/proxy/status/app_probe.ts\`);
const imported = await rss();
for (let i = 0; i < 3; i++) {
  const r = await runAppProbe({ grpc: { port: Number(port) }, timeoutSeconds: 5 });
  if (r.status !== 200) throw new Error(JSON.stringify(r));
}
console.log(JSON.stringify({ imported, probed: await rss() }));
Deno.exit(0);
`;

const rounds = Number(Deno.args[0] ?? 3);
const trees = Deno.args.slice(1);
if (trees.length === 0) throw new Error("give the checkouts to compare");
const raw = (b: Buffer) => b;
const server = new grpc.Server();
server.addService({
  Check: {
    path: "/grpc.health.v1.Health/Check",
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
} as grpc.ServiceDefinition, {
  // HealthCheckResponse { status: SERVING }
  Check: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.from([8, 1])),
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync(
    "127.0.0.1:0",
    grpc.ServerCredentials.createInsecure(),
    (e, p) => (e ? reject(e) : resolve(p)),
  )
);
const child = await ChildScript.write(CHILD);
try {
  console.log(
    "| round | checkout | VmRSS after import | after 3 gRPC probes | added |\n| --- | --- | --- | --- | --- |",
  );
  for (let round = 1; round <= rounds; round++) {
    for (const tree of trees) {
      const p = await child.run(tree, "--expose-gc", [String(port)]);
      const added = p.probed - p.imported;
      console.log(
        `| ${round} | ${tree} | ${p.imported.toFixed(1)} | ${p.probed.toFixed(1)} | ${added.toFixed(1)} |`,
      );
    }
  }
  console.log(`load average: ${(await Deno.readTextFile("/proc/loadavg")).trim()}`);
} finally {
  server.forceShutdown();
  await child.remove();
}
