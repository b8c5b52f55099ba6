/**
 * What a proxy's V8 heap holds: attaches to a proxy started with `--inspect=127.0.0.1:<port>` (the bench
 * does that with `BENCH_PROXY_INSPECT=1`: server proxy 9229, client proxy 9230), waits `delay` seconds,
 * prints `Deno.memoryUsage()`, forces a full GC and takes a heap snapshot over the inspector protocol, then
 * prints the snapshot's self sizes summed by node type and by type and name, and the largest strings (a
 * module's source is one string: V8 keeps it for lazy compilation). Run it beside a bench, e.g.
 * `./dev deno run -A tests/bench/proxy_pair/heap_summary.ts 9230 4 &` then
 * `BENCH_PROXY_INSPECT=1 BENCH_TARGETS=mesh ./dev deno run -A tests/bench/proxy_pair/main.ts 1 5`.
 * The snapshot itself costs the proxy memory: its VmHWM in such a run means nothing. KiB.
 *
 * @module
 */

type Result = { result?: { value?: string } };
type Snapshot = {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
};

const [port = "9229", delay = "4"] = Deno.args;

async function targetUrl(): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      if (list.length > 0) return list[0].webSocketDebuggerUrl;
    } catch {
      // The proxy is not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no inspector on 127.0.0.1:${port} within 60 s`);
}

const ws = new WebSocket(await targetUrl());
await new Promise((r) => ws.onopen = r);
let nextId = 0;
const chunks: string[] = [];
const pending = new Map<number, (v: unknown) => void>();
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(m.params.chunk);
  else if (pending.has(m.id)) {
    pending.get(m.id)!(m.result ?? m.error);
    pending.delete(m.id);
  }
};
function call(method: string, params: unknown = {}): Promise<unknown> {
  const id = ++nextId;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    ws.send(JSON.stringify({ id, method, params }));
  });
}

const kib = (n: number): string => (n / 1024).toFixed(0).padStart(7);
await call("Runtime.runIfWaitingForDebugger");
await new Promise((r) => setTimeout(r, Number(delay) * 1000));
const usage = await call("Runtime.evaluate", { expression: "JSON.stringify(Deno.memoryUsage())" }) as Result;
console.log(`Deno.memoryUsage() ${usage.result?.value}`);
await call("HeapProfiler.enable");
await call("HeapProfiler.collectGarbage");
await call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
ws.close();

const snap: Snapshot = JSON.parse(chunks.join(""));
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
const byType = new Map<string, number>();
const byName = new Map<string, { size: number; count: number }>();
const strings: { size: number; head: string }[] = [];
let total = 0;
for (let i = 0; i < snap.nodes.length; i += fields.length) {
  const type = types[snap.nodes[i + iType]];
  const size = snap.nodes[i + iSize];
  const name = snap.strings[snap.nodes[i + iName]];
  total += size;
  byType.set(type, (byType.get(type) ?? 0) + size);
  const isString = type.endsWith("string");
  const key = `${type}: ${isString ? "(strings)" : name.slice(0, 60)}`;
  const e = byName.get(key) ?? { size: 0, count: 0 };
  e.size += size;
  e.count++;
  byName.set(key, e);
  if (isString && size > 8192) strings.push({ size, head: name.slice(0, 80).replace(/\s+/g, " ") });
}
console.log(`heap snapshot: ${(total / 1048576).toFixed(2)} MiB`);
for (const [t, s] of [...byType].sort((a, b) => b[1] - a[1])) console.log(`${kib(s)}  ${t}`);
console.log("by type and name:");
for (const [k, e] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, 30)) {
  console.log(`${kib(e.size)} ${String(e.count).padStart(6)}×  ${k}`);
}
strings.sort((a, b) => b.size - a.size);
const big = strings.reduce((s, x) => s + x.size, 0);
console.log(`strings over 8 KiB: ${strings.length}, ${(big / 1048576).toFixed(2)} MiB; the largest:`);
for (const s of strings.slice(0, 25)) console.log(`${kib(s.size)}  ${s.head}`);
