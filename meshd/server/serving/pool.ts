/**
 * The serving pool (README.md): meshd accepts TCP on the public gRPC ports and relays the raw bytes,
 * never parsing them, to one of N serving children (child_main.ts) on loopback, which terminate TLS
 * and HTTP/2 and forward each call to meshd's handlers (bridge.ts). A child that dies (Deno's nghttp2
 * abort on a GOAWAY, denoland/deno#36788, or a kill) takes only its own connections with it: meshd
 * starts another, and new connections go to the live ones meanwhile.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { type BridgeServer, ChildCalls } from "./bridge.ts";
import { watchTlsMaterial } from "./tls_material.ts";
import { NoncedBytes } from "../../xds/delta_wire.ts";
import {
  type ChildServerOptions,
  FrameWriter,
  type FromChild,
  readFrames,
  type TlsMaterial,
  type Transport,
} from "./wire.ts";

/** Where the pool logs. */
export interface PoolLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link ServingPool}. */
export interface ServingPoolOptions {
  /** Children serving at once, at least 1; 2 or more so that a connection always finds a live one. */
  children: number;
  /** Public listeners: plain-text ADS, and the mutual-TLS port when `certificates` is given. */
  listen: Partial<Record<Transport, { hostname: string; port: number }>>;
  /** The services of each listener. */
  servers: Record<Transport, BridgeServer>;
  /** gRPC server options of the children. */
  serverOptions: ChildServerOptions;
  /** meshd's serving certificate and client roots; updates reach every child at once. */
  certificates?: grpc.experimental.CertificateProvider;
  logger?: PoolLogger;
  /** A child died (not stopped by the pool): its pid, how, and how many calls it took. */
  onChildDeath?(pid: number, how: string, calls: number): void;
}

/** One child as /debug pages show it. */
export interface ChildStatus {
  pid: number;
  ready: boolean;
  /** Relayed connections open to it. */
  connections: number;
  /** Calls in progress through it. */
  calls: number;
  startedAt: number;
}

interface Child {
  proc: Deno.ChildProcess;
  out: FrameWriter;
  calls: ChildCalls;
  ports?: Record<Transport, number>;
  connections: Set<Deno.Conn>;
  startedAt: number;
}

const CHILD_MAIN = new URL("./child_main.ts", import.meta.url).pathname;
const DENO_JSON = new URL("../../../deno.json", import.meta.url).pathname;
/** A child that dies sooner than this after its start is restarted after a growing delay. */
const CRASH_LOOP_MS = 2_000;

/** A listen address as the relay's loopback peers are keyed: `host:port`. */
function peerText(a: Deno.NetAddr): string {
  return `${a.hostname.includes(":") ? `[${a.hostname}]` : a.hostname}:${a.port}`;
}

/** Copies one direction with a 64 KiB buffer (the fastest copy measured, /work/shared/platform.md). */
async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) return;
      for (let at = 0; at < n;) at += await to.write(buf.subarray(at, n));
    }
  } catch {
    // A reset on either side ends the relay like an end of stream.
  }
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // Already closed.
  }
}

/** The supervisor and relay; see the module doc. */
export class ServingPool {
  readonly #o: ServingPoolOptions;
  readonly #children = new Set<Child>();
  readonly #listeners: Deno.Listener[] = [];
  /** Loopback port of a relayed connection (its end at the child) to the client's address. */
  readonly #peers = new Map<number, string>();
  #tls: TlsMaterial | undefined;
  #stopping = false;
  #next = 0;
  #deaths = 0;
  #quickDeaths = 0;
  #readyWaiters: (() => void)[] = [];
  /** Pending restarts of dead children (#exited); stop() clears them. */
  readonly #respawns = new Set<ReturnType<typeof setTimeout>>();

  /** @param options listeners, services, children; see {@link ServingPoolOptions} */
  constructor(options: ServingPoolOptions) {
    if (!(options.children >= 1)) {
      throw new RangeError(`serving children: need at least 1 (got ${options.children})`);
    }
    this.#o = options;
  }

  /** Children that died since the start (restarted each time). */
  get deaths(): number {
    return this.#deaths;
  }

  /** The children, for debug pages. */
  status(): ChildStatus[] {
    return [...this.#children].map((c) => ({
      pid: c.proc.pid,
      ready: c.ports !== undefined,
      connections: c.connections.size,
      calls: c.calls.size,
      startedAt: c.startedAt,
    }));
  }

  /**
   * Binds the public ports and starts the children; resolves once one child serves.
   *
   * @returns the bound ports (0 for a listener not asked for)
   * @throws Error naming the listener when a port cannot be bound, or when no child comes up in 30 s
   */
  async start(): Promise<Record<Transport, number>> {
    const ports: Record<Transport, number> = { plaintext: 0, tls: 0 };
    const run = await Deno.permissions.query({ name: "run", command: Deno.execPath() });
    if (run.state !== "granted") {
      throw new Error(`serving children need --allow-run (${Deno.execPath()}), or --servingChildren 0`);
    }
    if (this.#o.certificates) {
      this.#tls = await watchTlsMaterial(this.#o.certificates, (tls) => {
        this.#tls = tls;
        for (const c of this.#children) c.out.send({ t: "tls", tls });
      });
    }
    for (const transport of ["plaintext", "tls"] as const) {
      const at = this.#o.listen[transport];
      if (!at) continue;
      const listener = Deno.listen({ hostname: at.hostname, port: at.port });
      this.#listeners.push(listener);
      ports[transport] = (listener.addr as Deno.NetAddr).port;
      void this.#accept(listener, transport);
    }
    for (let i = 0; i < this.#o.children; i++) this.#spawn();
    if (!(await this.#waitReady(30_000))) throw new Error("serving children: none came up in 30 s");
    return ports;
  }

  /**
   * Stops accepting, waits up to `graceMs` (--shutdownDuration) for unary calls in flight (CSRs) to be
   * answered, then ends the children by closing their pipes. No GOAWAY and no stream end is sent:
   * the children exit and the kernel closes their connections (see the meshd README on why).
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    for (const timer of this.#respawns) clearTimeout(timer);
    this.#respawns.clear();
    for (const l of this.#listeners) closeQuietly(l);
    const deadline = Date.now() + graceMs;
    const busy = () => [...this.#children].some((c) => c.calls.unaryInFlight > 0);
    while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const exits = [...this.#children].map((c) => c.proc.status);
    for (const c of this.#children) await c.out.close();
    const timer = setTimeout(() => {
      for (const c of this.#children) this.#kill(c);
    }, 2_000);
    await Promise.all(exits);
    clearTimeout(timer);
  }

  /** The client's address behind a relayed connection, from the child's view of it (`127.0.0.1:<port>`). */
  #resolvePeer(loopbackPeer: string): string {
    const port = Number(loopbackPeer.slice(loopbackPeer.lastIndexOf(":") + 1));
    return this.#peers.get(port) ?? loopbackPeer;
  }

  #spawn(): void {
    const proc = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--config",
        DENO_JSON,
        // What a child may do: serve on loopback and read grpc-js's settings. No files, no processes.
        "--allow-net=127.0.0.1",
        "--allow-env",
        "--allow-read",
        CHILD_MAIN,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const out = new FrameWriter(proc.stdin);
    const child: Child = {
      proc,
      out,
      calls: new ChildCalls(
        this.#o.servers,
        (f, b) => out.send(f, b instanceof NoncedBytes ? b.join() : b),
        (p) => this.#resolvePeer(p),
      ),
      connections: new Set(),
      startedAt: Date.now(),
    };
    this.#children.add(child);
    out.send({
      t: "init",
      methods: { plaintext: this.#o.servers.plaintext.methods(), tls: this.#o.servers.tls.methods() },
      options: this.#o.serverOptions,
      tls: this.#tls,
    });
    void this.#read(child);
    void proc.status.then((s) => this.#exited(child, s));
  }

  async #read(child: Child): Promise<void> {
    try {
      for await (const { header, body } of readFrames<FromChild>(child.proc.stdout)) {
        if (header.t === "ready") {
          child.ports = header.ports;
          const waiters = this.#readyWaiters;
          this.#readyWaiters = [];
          for (const w of waiters) w();
        } else child.calls.onFrame(header, body);
      }
    } catch (e) {
      this.#o.logger?.error(`serving child ${child.proc.pid}: broken pipe (${(e as Error).message})`);
      this.#kill(child);
    }
  }

  #kill(child: Child): void {
    try {
      child.proc.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }

  #exited(child: Child, s: Deno.CommandStatus): void {
    this.#children.delete(child);
    child.ports = undefined;
    const calls = child.calls.size;
    child.calls.closeAll();
    for (const c of child.connections) closeQuietly(c);
    // A child that died (not ended by stop()) still holds the write end of its stdin pipe.
    void child.out.close();
    if (this.#stopping) return;
    const how = s.signal ? `signal ${s.signal}` : `exit code ${s.code}`;
    this.#deaths++;
    this.#o.onChildDeath?.(child.proc.pid, how, calls);
    const lived = Date.now() - child.startedAt;
    this.#quickDeaths = lived < CRASH_LOOP_MS ? this.#quickDeaths + 1 : 0;
    const delay = this.#quickDeaths === 0 ? 0 : Math.min(5_000, 100 * 2 ** this.#quickDeaths);
    // A warning, not an error: the design expects it and recovers by itself (README.md).
    this.#o.logger?.warn(
      `serving child ${child.proc.pid} died (${how}) with ${calls} calls; its clients reconnect to the ` +
        `others; starting another${delay ? ` in ${delay} ms` : ""}`,
    );
    const timer = setTimeout(() => {
      this.#respawns.delete(timer);
      if (!this.#stopping) this.#spawn();
    }, delay);
    this.#respawns.add(timer);
  }

  #pick(transport: Transport): Child | undefined {
    const ready = [...this.#children].filter((c) => c.ports && !c.out.broken);
    if (ready.length === 0) return undefined;
    const c = ready[this.#next++ % ready.length];
    return c.ports![transport] ? c : undefined;
  }

  #waitReady(ms: number): Promise<boolean> {
    if ([...this.#children].some((c) => c.ports)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#readyWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  async #accept(listener: Deno.Listener, transport: Transport): Promise<void> {
    try {
      for await (const conn of listener) void this.#relay(conn, transport);
    } catch (e) {
      if (!this.#stopping) {
        this.#o.logger?.error(`relay on ${transport} stopped accepting: ${(e as Error).message}`);
      }
    }
  }

  /** Relays one client connection to a live child; tries another if the chosen one is gone. */
  async #relay(client: Deno.Conn, transport: Transport): Promise<void> {
    let upstream: Deno.Conn | undefined;
    let child: Child | undefined;
    for (let attempt = 0; attempt < 3 && !upstream && !this.#stopping; attempt++) {
      child = this.#pick(transport);
      if (!child && !(await this.#waitReady(5_000))) break;
      child ??= this.#pick(transport);
      if (!child) continue;
      try {
        upstream = await Deno.connect({ hostname: "127.0.0.1", port: child.ports![transport] });
      } catch {
        upstream = undefined;
      }
    }
    if (!upstream || !child) return closeQuietly(client);
    const key = (upstream.localAddr as Deno.NetAddr).port;
    this.#peers.set(key, peerText(client.remoteAddr as Deno.NetAddr));
    child.connections.add(client);
    try {
      (client as Deno.TcpConn).setNoDelay(true);
      (upstream as Deno.TcpConn).setNoDelay(true);
    } catch {
      // Closed already; the pumps end at once.
    }
    // Either direction ending ends both: an HTTP/2 peer never half-closes TCP and expects more.
    await Promise.race([pump(client, upstream), pump(upstream, client)]);
    closeQuietly(client);
    closeQuietly(upstream);
    child.connections.delete(client);
    this.#peers.delete(key);
  }
}
