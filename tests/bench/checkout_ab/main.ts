/**
 * A/B of the proxy pair between this checkout and another (for example a worktree of main at the commit a
 * branch started from), interleaved in one run so that the load of a shared machine hits both alike:
 * both pairs (each the real `proxy` program twice, with its own in-process meshd + CA, as in
 * ../proxy_pair) stand side by side against one echo app, and short wrk loads alternate
 * (A, B, A, B, ...). Reports CPU microseconds per request (client + server proxy, /proc utime+stime over
 * the requests wrk completed) per round and their medians, and VmHWM of each proxy after the loads.
 * Throughput is printed too but is noise on a shared machine.
 *
 * Run: ./dev deno run -A tests/bench/checkout_ab/main.ts <other checkout> [rounds=4] [seconds=3]
 * (`git worktree add /tmp/base-<you> <commit>` makes the other checkout). Prints one JSON line.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import * as ours from "../pair_support.ts";

const other = Deno.args[0];
if (other === undefined) throw new Error("usage: main.ts <other checkout> [rounds=4] [seconds=3]");
const rounds = Number(Deno.args[1] ?? 4);
const seconds = Number(Deno.args[2] ?? 3);
const HOST = "app.foo.svc.cluster.local:8000";
const theirs: typeof ours = await import(
  pathToFileURL(join(resolve(other), "tests/bench/pair_support.ts")).href
);

async function commitOf(dir: string): Promise<string> {
  const out = await ours.run("git", ["-C", dir, "rev-parse", "--short", "HEAD"]);
  const dirty = (await ours.run("git", ["-C", dir, "status", "--porcelain", "--untracked-files=no"])).trim();
  return out.trim() + (dirty ? "+dirty" : "");
}

interface Side {
  name: string;
  commit: string;
  url: string;
  pids: { client_proxy: number; server_proxy: number };
  cpuUsPerRequest: number[];
  /** Per round, the client proxy's and the server proxy's share. */
  split: { client: number; server: number }[];
  rps: number[];
}

async function startSide(
  name: string,
  support: typeof ours,
  checkout: string,
  appPort: number,
): Promise<{ side: Side; bench: ours.BenchRun }> {
  const bench = await support.BenchRun.start(`checkout-ab-${name}-`);
  const inboundPort = freePort();
  const pair = await support.startMeshPair(
    bench,
    [{ name: "http", number: 8000, targetPort: inboundPort, protocol: "HTTP", appPort }],
    { concurrency: 1, v8Flags: support.proxyV8Flags() },
  );
  const url = `http://127.0.0.1:${pair.outboundPort}/`;
  await support.waitHttp(url, HOST, `${name}: the app through the proxy pair`);
  return {
    bench,
    side: {
      name,
      commit: await commitOf(checkout),
      url,
      pids: { client_proxy: pair.clientProxy.pid, server_proxy: pair.serverProxy.pid },
      cpuUsPerRequest: [],
      split: [],
      rps: [],
    },
  };
}

async function load(side: Side): Promise<void> {
  const c0 = ours.cpuSeconds(side.pids.client_proxy);
  const s0 = ours.cpuSeconds(side.pids.server_proxy);
  const out = await ours.run("wrk", [
    "-c50",
    "-t2",
    `-d${seconds}s`,
    "--timeout",
    "5s",
    "-H",
    `Host: ${HOST}`,
    side.url,
  ]);
  const client = ours.cpuSeconds(side.pids.client_proxy) - c0;
  const server = ours.cpuSeconds(side.pids.server_proxy) - s0;
  const requests = Number(/(\d+) requests in/.exec(out)![1]);
  const bad = /Non-2xx or 3xx responses: (\d+)|Socket errors/.exec(out);
  if (bad !== null) throw new Error(`${side.name}: wrk saw errors:\n${out}`);
  const us = (cpu: number) => ours.round((cpu / requests) * 1e6, 1);
  side.cpuUsPerRequest.push(us(client + server));
  side.split.push({ client: us(client), server: us(server) });
  side.rps.push(ours.round(requests / seconds, 0));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : ours.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2, 1);
}

const app = await ours.BenchRun.start("checkout-ab-app-");
const runs: ours.BenchRun[] = [app];
try {
  const appPort = freePort();
  app.spawn(Deno.execPath(), [
    "eval",
    `Deno.serve({hostname: "127.0.0.1", port: ${appPort}, onListen() {}}, () => new Response("hello from the app\\n"));`,
  ], { NO_COLOR: "1" });
  await ours.waitHttp(`http://127.0.0.1:${appPort}/`, HOST, "app");
  const a = await startSide("other", theirs, other, appPort);
  runs.push(a.bench);
  const b = await startSide("this", ours, new URL("../../..", import.meta.url).pathname, appPort);
  runs.push(b.bench);
  const sides = [a.side, b.side];
  for (const s of sides) await load(s); // warm-up, not counted
  for (const s of sides) s.cpuUsPerRequest.length = s.split.length = s.rps.length = 0;
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      ours.log(`round ${r + 1}: ${s.name}`);
      await load(s);
    }
  }
  const result = Object.fromEntries(sides.map((s) => [s.name, {
    commit: s.commit,
    cpu_us_per_request: s.cpuUsPerRequest,
    cpu_us_per_request_median: median(s.cpuUsPerRequest),
    client_median: median(s.split.map((x) => x.client)),
    server_median: median(s.split.map((x) => x.server)),
    rps: s.rps,
    mem_mib: {
      client_proxy: ours.memMiB(s.pids.client_proxy),
      server_proxy: ours.memMiB(s.pids.server_proxy),
    },
  }]));
  console.log(JSON.stringify({
    rounds,
    seconds,
    ...result,
    cpu_ratio_this_vs_other: ours.round(
      median(b.side.cpuUsPerRequest) / median(a.side.cpuUsPerRequest),
      3,
    ),
  }));
} finally {
  for (const r of runs.reverse()) await r.close();
}
