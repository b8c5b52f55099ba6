/**
 * What each library of the proxy's control half costs on the isolate that imports it: one fresh
 * `deno run` per step, each importing what the step names (cumulatively, in the order below) and
 * then reporting VmRSS and VmHWM from /proc/self/status and V8's heap from Deno.memoryUsage(), after
 * a GC when --expose-gc allows. Figures are MiB, and only differences between rows of one run mean
 * anything (the machine is shared).
 *
 * Run: `./dev deno run -A tests/bench/agent_memory/imports.ts [rounds]` (default 3 rounds; each row
 * reports the median).
 *
 * @module
 */

/** The steps, each adding imports to the previous ones. */
const STEPS: { name: string; code: string }[] = [
  { name: "bare deno", code: "" },
  {
    name: "+ node:tls, node:http2 (npm compat layer)",
    code: `await import("node:tls"); await import("node:http2");`,
  },
  {
    name: "+ shared/mod.ts (protobufjs, descriptors, policy)",
    code: `await import("../../../shared/mod.ts");`,
  },
  { name: "+ @grpc/grpc-js", code: `await import("@grpc/grpc-js");` },
  {
    name: "+ proto-loader + Envoy ADS protos loaded",
    code: `(await import("../../../shared/internal/xds/envoy_protos.ts")).adsProtocol();`,
  },
  { name: "+ @peculiar/x509", code: `await import("@peculiar/x509");` },
  { name: "+ jose", code: `await import("jose");` },
  { name: "+ prom-client", code: `await import("prom-client");` },
];

/** Alone, over bare Deno: each library without the others. */
const ALONE: { name: string; code: string }[] = [
  { name: "node:tls + node:http2 alone", code: STEPS[1].code },
  { name: "protobufjs alone", code: `await import("protobufjs");` },
  {
    name: "shared/proto/resources.ts (protobufjs + descriptors) alone",
    code: `await import("../../../shared/proto/resources.ts");`,
  },
  { name: "shared/mod.ts alone", code: STEPS[2].code },
  { name: "@grpc/grpc-js alone", code: STEPS[3].code },
  { name: "grpc-js + proto-loader + ADS protos alone", code: STEPS[4].code },
  {
    name: "proxy/agent/ads_wire.ts (protobufjs + the narrow ADS/CSR descriptor) alone",
    code: `await import("../../../proxy/agent/ads_wire.ts");`,
  },
  { name: "@peculiar/x509 alone", code: STEPS[5].code },
  { name: "jose alone", code: STEPS[6].code },
  { name: "prom-client alone", code: STEPS[7].code },
  {
    name: "proxy/agent/agent.ts (the whole agent) alone",
    code: `await import("../../../proxy/agent/agent.ts");`,
  },
];

const PROBE = `
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
await new Promise((r) => setTimeout(r, 200));
gc?.();
const status = await Deno.readTextFile("/proc/self/status");
const kb = (k: string) => Number(new RegExp(k + ":\\\\s+(\\\\d+)").exec(status)![1]);
const m = Deno.memoryUsage();
console.log(JSON.stringify({ rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024, heap: m.heapUsed / 2 ** 20, ext: m.external / 2 ** 20 }));
`;

type Probe = { rss: number; hwm: number; heap: number; ext: number };

async function probe(code: string): Promise<Probe> {
  const file = new URL(`./.probe_${crypto.randomUUID()}.ts`, import.meta.url);
  await Deno.writeTextFile(file, `${code}\n${PROBE}`);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--expose-gc", file.pathname],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
    return JSON.parse(text);
  } finally {
    await Deno.remove(file);
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const rounds = Number(Deno.args[0] ?? 3);
const rows: { name: string; code: string }[] = [];
let code = "";
for (const step of STEPS) {
  code += step.code + "\n";
  rows.push({ name: step.name, code });
}
rows.push(...ALONE);
const results = new Map<string, Probe[]>(rows.map((r) => [r.name, []]));
for (let i = 0; i < rounds; i++) {
  // Interleaved: every row once per round, so machine noise spreads over all rows.
  for (const row of rows) results.get(row.name)!.push(await probe(row.code));
}
const base = median(results.get("bare deno")!.map((p) => p.rss));
console.log(`| step | RSS MiB | over bare | heap used MiB | external MiB |`);
console.log(`| --- | --- | --- | --- | --- |`);
for (const row of rows) {
  const ps = results.get(row.name)!;
  const rss = median(ps.map((p) => p.rss));
  console.log(
    `| ${row.name} | ${rss.toFixed(1)} | ${(rss - base).toFixed(1)} | ${
      median(ps.map((p) => p.heap)).toFixed(1)
    } | ${median(ps.map((p) => p.ext)).toFixed(1)} |`,
  );
}
