/**
 * The proxy agent alone, connected to a real in-process meshd and ready (certificate and every type
 * answered), in a child process per checkout: VmRSS, VmHWM and V8's heap after GCs, plain-text ADS and
 * mutual TLS (first CSR by bootstrap token), interleaved over the checkouts given, so that an A/B in one
 * run compares two commits (a worktree of the base and this one). MiB; only differences within a run
 * mean anything on the shared machine.
 *
 * Run: `./dev deno run -A tests/bench/agent_memory/connected.ts [rounds] <checkout>...`
 * e.g. `... connected.ts 3 /tmp/base /work/wt/adsfetch`.
 *
 * @module
 */
import { SERVICE, startCa, startMeshd } from "../../integration/meshd_support.ts";
import { ChildScript } from "./child_runner.ts";

const CHILD = `
const [mode, port, dir] = Deno.args;
const { ProxyAgent } = await import(\`\${Deno.cwd()}/proxy/agent/agent.ts\`);
const node = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };
const agent = mode === "plain"
  ? new ProxyAgent({ node, discoveryAddress: \`127.0.0.1:\${port}\`, plaintext: true })
  : new ProxyAgent({ node, discoveryAddress: \`127.0.0.1:\${port}\`, rootCertFile: \`\${dir}/root-cert.pem\`,
      ca: { tokenFile: \`\${dir}/istio-token\` } });
await agent.start();
await agent.ready();
for (let i = 0; i < 3; i++) { globalThis.gc?.(); await new Promise((r) => setTimeout(r, 300)); }
const s = await Deno.readTextFile("/proc/self/status");
const mib = (k) => Number(new RegExp(k + ":\\\\s+(\\\\d+)").exec(s)[1]) / 1024;
console.log(JSON.stringify({ rss: mib("VmRSS"), hwm: mib("VmHWM"), heap: Deno.memoryUsage().heapUsed / 2 ** 20 }));
await agent.stop({ exiting: true });
Deno.exit(0);
`;

const rounds = Number(Deno.args[0] ?? 3);
const trees = Deno.args.slice(1);
if (trees.length === 0) throw new Error("give the checkouts to compare");
const dir = await Deno.makeTempDir();
await Deno.mkdir(`${dir}/config`);
await Deno.writeTextFile(`${dir}/config/services.yaml`, SERVICE);
const ca = await startCa(`${dir}/ca`);
const meshd = await startMeshd(`${dir}/config`, { ca });
const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
await Deno.writeTextFile(`${dir}/istio-token`, token);
await Deno.writeTextFile(`${dir}/root-cert.pem`, ca.trustBundlePem);
const child = await ChildScript.write(CHILD);
try {
  console.log(
    "| round | mode | checkout | VmRSS | VmHWM | heap used |\n| --- | --- | --- | --- | --- | --- |",
  );
  for (let round = 1; round <= rounds; round++) {
    for (const mode of ["plain", "mtls"]) {
      for (const tree of trees) {
        const port = mode === "plain" ? meshd.grpcPort : meshd.securePort;
        const p = await child.run(tree, "--expose-gc,--max-semi-space-size=1", [mode, String(port), dir]);
        console.log(
          `| ${round} | ${mode} | ${tree} | ${p.rss.toFixed(1)} | ${p.hwm.toFixed(1)} | ${
            p.heap.toFixed(1)
          } |`,
        );
      }
    }
  }
} finally {
  await child.remove();
  await meshd.stop();
  await ca.stop();
  await Deno.remove(dir, { recursive: true });
}
