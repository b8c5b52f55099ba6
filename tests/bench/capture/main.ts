/**
 * What capture costs: connections per second through a listener that REDIRECTed connections reach,
 * and the µs per connection of finding the original destination, at 1, 1,000 and 10,000 other open
 * sockets in the process, for:
 * - `none`: no lookup (the floor);
 * - `handle`: `originalDestination` (proxy/capture): the node:net handle's fd (`fdForIpc`), verified
 *   with getpeername and getsockname, then getsockopt(SO_ORIGINAL_DST), all through FFI;
 * - `scan`: the fallback for a Deno without `fdForIpc`: every fd from 3 tried with getpeername;
 * and the cost of NETMAP's design, one listener per service address and port: the memory and time of
 * opening 1,000 and 10,000 node:net listeners.
 *
 * The other sockets are connections held open to a second listener of the process by a python3
 * child (so they are one fd each here). Runs as root in its own namespace (subnet 10.221.9.0/24):
 *   ./dev deno run -A tests/bench/capture/main.ts [--connections 2000] [--concurrency 8]
 * Prints one line per case. Figures and their reading: proxy/capture/README.md.
 *
 * @module
 */
import net from "node:net";
import { parseArgs } from "node:util";
import { captureNetns } from "../../../proxy/capture/netns_test_support.ts";
import {
  destinationOfFd,
  findFdByScan,
  originalDestination,
} from "../../../proxy/capture/original_destination.ts";
import { ALLOW_FFI_FLAG, openLibc } from "../../../proxy/capture/libc.ts";

const PORT = 15001;
const HOLD_PORT = 15999;
type Mode = "none" | "handle" | "scan";

const args = parseArgs({
  args: Deno.args,
  options: {
    connections: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "8" },
    inside: { type: "boolean", default: false },
  },
});

if (!args.values.inside) {
  const ns = await captureNetns(9, PORT);
  try {
    const me = new URL(import.meta.url).pathname;
    const cmd = [
      Deno.execPath(),
      "run",
      "--allow-net",
      "--allow-run",
      "--allow-read",
      "--allow-env",
      "--allow-sys",
      ALLOW_FFI_FLAG,
      me,
      "--inside",
      `--connections=${args.values.connections}`,
      `--concurrency=${args.values.concurrency}`,
    ];
    const out = await new Deno.Command("ip", {
      args: ["netns", "exec", ns.name, "bash", "-c", `exec "$@"`, "bash", ...cmd],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!out.success) Deno.exit(1);
  } finally {
    await ns.remove();
  }
  Deno.exit(0);
}

const opened = openLibc();
if (!opened.ok) throw new Error(opened.reason);
const { libc, errno } = opened;
let mode: Mode = "none";
let lookupMs = 0;
let wrong = 0;

const server = net.createServer((s) => {
  s.on("error", () => {});
  const t0 = performance.now();
  let port = 0;
  if (mode === "handle") {
    const r = originalDestination(s);
    port = r.kind === "redirected" ? r.destination.port : -1;
  } else if (mode === "scan") {
    const fd = findFdByScan(libc, s as unknown as Parameters<typeof findFdByScan>[1]);
    const r = destinationOfFd(libc, errno, fd, s);
    port = r.kind === "redirected" ? r.destination.port : -1;
  }
  lookupMs += performance.now() - t0;
  if (mode !== "none" && port !== 8001) wrong++;
  s.end("x");
});
await new Promise<void>((r) => server.listen(PORT, "127.0.0.1", r));
const held: net.Socket[] = [];
const holder = net.createServer((s) => {
  s.on("error", () => {});
  held.push(s);
});
await new Promise<void>((r) => holder.listen(HOLD_PORT, "127.0.0.1", r));

/** Has a python3 child open `n` connections to the holder; resolves when all are accepted. */
async function holdOthers(n: number): Promise<Deno.ChildProcess> {
  const py =
    `import socket,sys,time\ns=[socket.create_connection(("127.0.0.1",${HOLD_PORT})) for _ in range(${n})]\n` +
    `print("held",flush=True)\ntime.sleep(3600)`;
  const child = new Deno.Command("bash", {
    args: ["-c", `exec /usr/bin/python3 -c '${py}'`],
    stdout: "null",
  }).spawn();
  while (held.length < n) await new Promise((r) => setTimeout(r, 20));
  return child;
}

function oneConnection(): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ host: "10.221.9.7", port: 8001 });
    c.on("data", () => c.end());
    c.on("close", () => resolve());
    c.on("error", reject);
  });
}

async function run(m: Mode, n: number, concurrency: number): Promise<{ cps: number; us: number }> {
  mode = m;
  lookupMs = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await oneConnection();
  }));
  const ms = performance.now() - t0;
  return { cps: (n * 1000) / ms, us: (lookupMs * 1000) / n };
}

const n = Number(args.values.connections);
const concurrency = Number(args.values.concurrency);
for (const others of [1, 1000, 10000]) {
  const child = await holdOthers(others);
  for (const m of ["none", "handle", "scan"] as Mode[]) {
    await run(m, Math.min(200, n), concurrency); // warm-up
    const r = await run(m, m === "scan" && others >= 10000 ? Math.min(n, 500) : n, concurrency);
    console.log(
      `others=${others} mode=${m}: ${r.cps.toFixed(0)} connections/s, lookup ${
        r.us.toFixed(1)
      } us/connection`,
    );
  }
  child.kill("SIGKILL");
  await child.status;
  for (const s of held.splice(0)) s.destroy();
}
if (wrong > 0) throw new Error(`${wrong} lookups gave the wrong destination`);

// NETMAP needs a listener per service address and port: what many listeners cost.
for (const k of [1000, 10000]) {
  const before = Deno.memoryUsage().rss;
  const t0 = performance.now();
  const servers: net.Server[] = [];
  for (let i = 0; i < k; i++) {
    const s = net.createServer(() => {});
    await new Promise<void>((r) => s.listen(20000 + i, "127.0.0.1", r));
    servers.push(s);
  }
  const ms = performance.now() - t0;
  const mib = (Deno.memoryUsage().rss - before) / 1048576;
  console.log(
    `listeners=${k}: opened in ${ms.toFixed(0)} ms, RSS +${mib.toFixed(1)} MiB (${
      (mib * 1024 / k).toFixed(1)
    } KiB each), ${k} fds`,
  );
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
}
server.close();
holder.close();
