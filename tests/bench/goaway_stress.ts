/**
 * GOAWAY stress (denoland/deno#36788): Deno can abort inside nghttp2 (`find_stream_on_goaway_func`,
 * exit 134, or a silent 139) while an HTTP/2 session handles a GOAWAY. This tool runs a real meshd
 * process (`meshd discovery`, plain-text ADS) and a client process that opens and ends N ADS
 * connections in one close pattern, C at a time, and counts how often either process dies. A dead
 * meshd is restarted and the run goes on with the connections that are left.
 *
 * Patterns (each stream subscribes like a sidecar, waits for a response, then ends):
 * - `cancel`: `call.cancel(); client.close()` at once, one connection per stream (the agent's old way)
 * - `cancel-shared`: the same over grpc-js's shared subchannel pool (successive clients may reuse a connection)
 * - `graceful`: half-close, wait for meshd's status (at most 2 s), then close; one connection per stream
 * - `graceful-shared`: the same over the shared pool
 * - `kill`: nothing is closed; the client process is killed every 50 connections, so the kernel closes
 *   them (no GOAWAY from the client)
 * - `agent`: the real proxy/agent AdsClient, start then `await stop()`
 * - `agent-exit`: as the proxy process ends: 50 AdsClients (sharing grpc-js's pool, so one connection),
 *   each `await stop({ exiting: true })`, then the process exits and the kernel closes the connection
 * - `restart`: the other direction: C proxy processes (one agent client each) connect, stay idle for
 *   `--idle` seconds, then meshd is stopped with SIGTERM (its graceful shutdown) and started again on
 *   the same port, N times; counts deaths of the client processes
 *
 * meshd runs with `--grpcTransport` from `--grpc-transport` (default codec: meshd's own HTTP/2 codec in
 * its main process) and `--servingChildren` from `--serving-children` (with `--grpc-transport children`:
 * default 2; 0 is the old in-process grpc-js server): a dead serving child is counted from meshd's log, a
 * dead meshd from its exit.
 *
 * Run: ./dev deno run -A tests/bench/goaway_stress.ts [--n 1000] [--c 4] [--idle 5]
 *   [--grpc-transport codec|children] [--serving-children 2]
 *   [pattern...]
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";
import { AdsClient } from "../../proxy/agent/ads_client.ts";
import { type NodeOptions, xdsNode } from "../../proxy/agent/node.ts";
import { SUBSCRIBED } from "../../proxy/agent/resources.ts";
import { type Msg, SERVICE } from "../../meshd/server/test_support.ts";

const PATTERNS = [
  "cancel",
  "cancel-shared",
  "graceful",
  "graceful-shared",
  "kill",
  "agent",
  "agent-exit",
  "restart",
] as const;
type Pattern = typeof PATTERNS[number];

const MESHD_MAIN = new URL("../../meshd/main.ts", import.meta.url).pathname;

function node(i: number): NodeOptions {
  return { ip: `10.1.${(i >> 8) & 255}.${i & 255}`, name: `httpbin-${i % 50}`, namespace: "foo" };
}

/** One stream in a raw pattern: subscribe, wait for a response, end it the pattern's way. */
function rawStream(address: string, pattern: Pattern, i: number): Promise<void> {
  const shared = pattern.endsWith("-shared");
  const client = new (adsProtocol().client)(address, grpc.credentials.createInsecure(), {
    ...(shared ? {} : { "grpc.use_local_subchannel_pool": 1 }),
  });
  const call = (client as unknown as Msg).DeltaAggregatedResources() as grpc.ClientDuplexStream<Msg, Msg>;
  return new Promise<void>((resolve) => {
    let answered = false;
    const timer = setTimeout(() => finish(), 10_000);
    const finish = () => {
      clearTimeout(timer);
      client.close();
      resolve();
    };
    call.on("error", () => {});
    call.on("status", () => {
      if (answered && pattern.startsWith("graceful")) finish();
    });
    call.on("data", (res: Msg) => {
      // Nothing is written after the half-close: a write after end breaks the call before its status.
      if (answered && pattern !== "kill") return;
      call.write({ typeUrl: res.typeUrl, responseNonce: res.nonce });
      answered = true;
      if (pattern === "kill") return resolve();
      if (pattern.startsWith("cancel")) {
        call.cancel();
        return finish();
      }
      call.end();
      clearTimeout(timer);
      setTimeout(finish, 2000);
    });
    for (const [k, { typeUrl }] of SUBSCRIBED.entries()) {
      call.write({ ...(k === 0 ? { node: xdsNode(node(i)) } : {}), typeUrl, resourceNamesSubscribe: ["*"] });
    }
  });
}

/** One stream of the real agent client. */
async function agentStream(address: string, i: number, exiting: boolean): Promise<void> {
  const connected = Promise.withResolvers<void>();
  const ads = new AdsClient({
    address,
    node: node(i),
    plaintext: true,
    hooks: { onAck: () => connected.resolve() },
  });
  ads.start();
  await Promise.race([connected.promise, new Promise((r) => setTimeout(r, 10_000))]);
  await ads.stop({ exiting });
}

/** Client mode: runs `n` streams, `c` at a time, and prints `n <done>` as it goes. */
async function runClient(address: string, pattern: Pattern, n: number, c: number, first = 0): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++ + first;
      await (pattern.startsWith("agent")
        ? agentStream(address, i, pattern === "agent-exit")
        : rawStream(address, pattern, i));
      if (++done % 25 === 0 && done < n) console.log(`n ${done}`);
    }
  };
  await Promise.all(Array.from({ length: c }, worker));
  console.log(`n ${done}`);
  // `agent-exit` ends as the proxy does; with `kill` the open channels keep it alive until it is killed.
  if (pattern === "agent-exit") Deno.exit(0);
}

/** Restart-mode client: one agent client that stays connected; prints `connected <0|1>` on changes. */
function runIdleClients(address: string): void {
  const clients = Array.from({ length: 1 }, (_, i) =>
    new AdsClient({
      address,
      node: node(i),
      plaintext: true,
      backoff: { initialMs: 100, maxMs: 1000 },
    }));
  for (const a of clients) a.start();
  let last = -1;
  setInterval(() => {
    const k = clients.filter((a) => a.connected).length;
    if (k !== last) console.log(`connected ${k}`);
    last = k;
  }, 100);
}

interface Proc {
  child: Deno.ChildProcess;
  lines: ReadableStreamDefaultReader<string>;
  exited: boolean;
  status: Promise<Deno.CommandStatus>;
}

function spawn(args: string[], env: Record<string, string> = {}): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const proc: Proc = {
    child,
    lines: child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(lineSplitter()).getReader(),
    exited: false,
    status: child.status,
  };
  child.stderr.pipeTo(new WritableStream({ write: () => {} })).catch(() => {});
  proc.status.then(() => (proc.exited = true));
  return proc;
}

function lineSplitter(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, out) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      for (const p of parts) out.enqueue(p);
    },
  });
}

/** `--serving-children` of the run: meshd's --servingChildren (0: the old in-process server). */
let servingChildren = 2;
/** `--grpc-transport` of the run: meshd's --grpcTransport. */
let grpcTransport = "codec";

interface Meshd {
  proc: Proc;
  port: number;
  /** Serving children that died (meshd's log), each replaced by meshd. */
  childDeaths: number;
}

async function startMeshd(dir: string, port: number): Promise<Meshd> {
  const proc = spawn([
    "run",
    "-A",
    MESHD_MAIN,
    "discovery",
    ...["--configDir", `${dir}/config`, "--meshConfig", `${dir}/no-mesh-config`],
    ...["--grpcAddr", `127.0.0.1:${port}`, "--secureGRPCAddr", "127.0.0.1:0", "--httpAddr", "127.0.0.1:0"],
    ...["--httpsAddr", "127.0.0.1:0"],
    ...["--monitoringAddr", "127.0.0.1:0", "--ctrlz_port", "0", "--shutdownDuration", "2s"],
    ...["--servingChildren", `${servingChildren}`, "--grpcTransport", grpcTransport],
  ], { ROOT_CA_DIR: `${dir}/ca` });
  for (;;) {
    const { value, done } = await proc.lines.read();
    if (done) throw new Error(`meshd exited before serving: ${JSON.stringify(await proc.status)}`);
    const m = /ADS listening on .* \(port (\d+)\)/.exec(value);
    if (m) {
      const meshd: Meshd = { proc, port: Number(m[1]), childDeaths: 0 };
      // meshd logs to stdout: it must be drained, or meshd blocks once the pipe is full.
      (async () => {
        for (;;) {
          const { value, done } = await proc.lines.read();
          if (done) return;
          if (/serving child \d+ died/.test(value)) meshd.childDeaths++;
        }
      })();
      return meshd;
    }
  }
}

function describe(s: Deno.CommandStatus): string {
  return s.signal ? `signal ${s.signal}` : `exit ${s.code}`;
}

async function kill(p: Proc): Promise<void> {
  if (!p.exited) p.child.kill("SIGKILL");
  await p.status;
}

interface Result {
  pattern: Pattern;
  connections: number;
  meshdDeaths: string[];
  /** Serving children that died and were replaced (meshd itself alive). */
  childDeaths: number;
  clientDeaths: string[];
  seconds: number;
}

function emptyResult(pattern: Pattern): Result {
  return { pattern, connections: 0, meshdDeaths: [], childDeaths: 0, clientDeaths: [], seconds: 0 };
}

async function stress(dir: string, pattern: Pattern, n: number, c: number): Promise<Result> {
  const started = performance.now();
  const result = emptyResult(pattern);
  while (result.connections < n) {
    const meshd = await startMeshd(dir, 0);
    const client = spawn([
      "run",
      "-A",
      import.meta.filename!,
      "--client",
      pattern,
      "--address",
      `127.0.0.1:${meshd.port}`,
      "--n",
      String(n - result.connections),
      "--c",
      String(c),
    ]);
    let done = 0;
    const reading = (async () => {
      for (;;) {
        const { value, done: end } = await client.lines.read();
        if (end) return;
        const m = /^n (\d+)$/.exec(value);
        if (m) done = Number(m[1]);
      }
    })();
    const which = await Promise.race([
      meshd.proc.status.then(() => "meshd"),
      client.status.then(() => "client"),
    ]);
    if (which === "meshd") {
      result.meshdDeaths.push(`${describe(await meshd.proc.status)} after ${result.connections + done}`);
      await kill(client);
    } else {
      const s = await client.status;
      if (!s.success) result.clientDeaths.push(`${describe(s)} after ${result.connections + done}`);
      await kill(meshd.proc);
    }
    await reading;
    result.childDeaths += meshd.childDeaths;
    result.connections += done;
    if (which === "client" && (await client.status).success) break;
    if (result.meshdDeaths.length + result.clientDeaths.length > 50) break;
  }
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

/**
 * `kill` and `agent-exit`: batches of 50 streams in a client process that then ends (killed, or
 * exiting by itself); one meshd throughout, restarted if it dies.
 */
async function batches(dir: string, pattern: Pattern, n: number, c: number): Promise<Result> {
  const started = performance.now();
  const result = emptyResult(pattern);
  let meshd = await startMeshd(dir, 0);
  while (result.connections < n && result.meshdDeaths.length < 50) {
    const client = spawn([
      "run",
      "-A",
      import.meta.filename!,
      ...["--client", pattern, "--address", `127.0.0.1:${meshd.port}`, "--n", "50", "--c", `${c}`],
      ...["--first", `${result.connections}`],
    ]);
    let done = 0;
    while (done < 50 && !meshd.proc.exited) {
      const { value, done: end } = await client.lines.read();
      if (end) break;
      const m = /^n (\d+)$/.exec(value);
      if (m) done = Number(m[1]);
    }
    if (pattern === "kill") await kill(client);
    else {
      const s = await Promise.race([
        client.status,
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000)),
      ]);
      if (s && !s.success) result.clientDeaths.push(`${describe(s)} after ${result.connections + done}`);
      await kill(client);
    }
    result.connections += done;
    await new Promise((r) => setTimeout(r, 200));
    if (meshd.proc.exited) {
      result.meshdDeaths.push(`${describe(await meshd.proc.status)} after ${result.connections}`);
      result.childDeaths += meshd.childDeaths;
      meshd = await startMeshd(dir, 0);
    }
  }
  await kill(meshd.proc);
  result.childDeaths += meshd.childDeaths;
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

async function restarts(dir: string, n: number, c: number, idleS: number): Promise<Result> {
  const started = performance.now();
  const result = emptyResult("restart");
  let meshd = await startMeshd(dir, 0);
  const port = meshd.port;
  // One process per proxy: AdsClients of one process share a connection (grpc-js's pool).
  interface Idle {
    proc: Proc;
    connected: boolean;
    watching: Promise<void>;
  }
  const spawnClient = (): Idle => {
    const proc = spawn([
      "run",
      "-A",
      import.meta.filename!,
      "--client",
      "restart",
      "--address",
      `127.0.0.1:${port}`,
    ]);
    const idle: Idle = { proc, connected: false, watching: Promise.resolve() };
    idle.watching = (async () => {
      for (;;) {
        const { value, done } = await proc.lines.read();
        if (done) return;
        const m = /^connected (\d+)$/.exec(value);
        if (m) idle.connected = m[1] === "1";
      }
    })();
    return idle;
  };
  const clients = Array.from({ length: c }, spawnClient);
  for (let round = 0; round < n; round++) {
    const deadline = Date.now() + 30_000;
    while (clients.some((k) => !k.connected && !k.proc.exited) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, idleS * 1000));
    meshd.proc.child.kill("SIGTERM");
    await meshd.proc.status;
    result.childDeaths += meshd.childDeaths;
    result.connections++;
    await new Promise((r) => setTimeout(r, 300));
    for (const [k, client] of clients.entries()) {
      if (!client.proc.exited) continue;
      result.clientDeaths.push(`${describe(await client.proc.status)} at restart ${round + 1}`);
      await client.watching;
      clients[k] = spawnClient();
    }
    meshd = await startMeshd(dir, port);
  }
  for (const client of clients) {
    await kill(client.proc);
    await client.watching;
  }
  await kill(meshd.proc);
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      client: { type: "string" },
      address: { type: "string" },
      n: { type: "string", default: "1000" },
      c: { type: "string", default: "4" },
      idle: { type: "string", default: "5" },
      first: { type: "string", default: "0" },
      "serving-children": { type: "string", default: "2" },
      "grpc-transport": { type: "string", default: "codec" },
    },
  });
  servingChildren = Number(values["serving-children"]);
  grpcTransport = values["grpc-transport"]!;
  const n = Number(values.n);
  const c = Number(values.c);
  if (values.client === "restart") runIdleClients(values.address!);
  else if (values.client) {
    await runClient(values.address!, values.client as Pattern, n, c, Number(values.first));
  } else {
    const patterns = (positionals.length ? positionals : PATTERNS) as Pattern[];
    for (const p of patterns) {
      if (!PATTERNS.includes(p)) throw new Error(`unknown pattern ${p}; one of ${PATTERNS.join(", ")}`);
    }
    const dir = await Deno.makeTempDir({ prefix: "goaway-stress-" });
    await Deno.mkdir(`${dir}/config`);
    await Deno.writeTextFile(`${dir}/config/service.yaml`, SERVICE);
    try {
      for (const p of patterns) {
        const r = p === "restart"
          ? await restarts(dir, n, c, Number(values.idle))
          : p === "kill" || p === "agent-exit"
          ? await batches(dir, p, n, c)
          : await stress(dir, p, n, c);
        const unit = p === "restart" ? "meshd restarts" : "connections";
        console.log(
          `${p}: ${r.connections} ${unit} in ${
            r.seconds.toFixed(0)
          } s; meshd died ${r.meshdDeaths.length} times` +
            `; serving children died ${r.childDeaths} times (replaced)` +
            (r.meshdDeaths.length ? ` (${r.meshdDeaths.join(", ")})` : "") +
            `; client died ${r.clientDeaths.length} times` +
            (r.clientDeaths.length ? ` (${r.clientDeaths.join(", ")})` : ""),
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
}
