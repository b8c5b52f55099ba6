/**
 * `lab port-forward`, as `kubectl port-forward`: listens on 127.0.0.1:<local> in the host's network
 * namespace and relays each connection to <remote> inside a lab target's namespace (meshd or a
 * workload), where nothing of the host can reach. Per forward, one relay process runs inside the
 * target's namespace (forward_relay.ts) behind a Unix socket, which both namespaces can open; it ends
 * with the forward, or with this process however it ends.
 *
 * @module
 */
import { join } from "node:path";
import { findWorkload, upState } from "./exec.ts";
import { parseHostPort, pipeConnections } from "./forward_relay.ts";
import { repoRoot } from "./state.ts";

/** One `[<local>:]<remote>` of the command line; `local` 0 picks a free port. */
export interface PortSpec {
  local: number;
  remote: number;
}

function portNumber(text: string, spec: string, allowZero: boolean): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1) || n > 65535) {
    throw new Error(
      `port ${JSON.stringify(spec)}: ${JSON.stringify(text)} is not a port number (${
        allowZero ? 0 : 1
      }-65535)`,
    );
  }
  return n;
}

/**
 * Parses `<remote>`, `<local>:<remote>` or `:<remote>` (a free local port), as kubectl does; a lone
 * `<remote>` listens on the same port number locally.
 *
 * @throws Error naming the spec and the reason
 */
export function parsePortSpec(spec: string): PortSpec {
  const parts = spec.split(":");
  if (parts.length > 2) throw new Error(`port ${JSON.stringify(spec)}: expected [<local>:]<remote>`);
  const remote = portNumber(parts[parts.length - 1], spec, false);
  if (parts.length === 1) return { local: remote, remote };
  return { local: parts[0] === "" ? 0 : portNumber(parts[0], spec, true), remote };
}

/** Where a target's ports are: its network namespace and its address on the lab's network. */
export interface ForwardTarget {
  /** `meshd` or `<namespace>/<workload>`. */
  name: string;
  netns: string;
  podAddress: string;
}

/**
 * Resolves `meshd` or `<namespace>/<workload>` in running lab `lab`.
 *
 * @throws Error when the lab is not up, or naming the lab's workloads when there is no such one
 */
export async function forwardTarget(
  lab: string,
  target: string,
  options: { dir?: string } = {},
): Promise<ForwardTarget> {
  if (target === "meshd") {
    const plan = (await upState(lab, options)).plan;
    if (!plan) throw new Error(`lab ${lab}: its state has no plan (lab up did not get far)`);
    return { name: target, netns: plan.meshd.netns, podAddress: plan.meshd.address };
  }
  if (!target.includes("/")) {
    throw new Error(`target ${JSON.stringify(target)}: expected meshd or <namespace>/<workload>`);
  }
  const w = await findWorkload(lab, target, options);
  return { name: target, netns: w.netns, podAddress: w.address };
}

/** An open forward. */
export interface PortForward {
  /** Where it listens, `127.0.0.1:<port>` in this namespace. */
  localAddress: string;
  localPort: number;
  /** `<host>:<port>` inside `netns`. */
  remote: string;
  netns: string;
  /** Stops listening, ends the relay process and its open connections. */
  close(): Promise<void>;
}

/** Options of {@link openPortForward}. */
export interface PortForwardOptions {
  /** Local port; 0 or absent picks a free one. */
  localPort?: number;
  /** Local address to listen on; default 127.0.0.1. */
  hostname?: string;
  /** Called for each accepted connection (kubectl prints "Handling connection for <port>"). */
  onConnection?: () => void;
  /** Called with a line when the relay cannot dial the remote. */
  onError?: (line: string) => void;
  /** How long the relay may take to start; default 15 s. */
  startTimeoutMs?: number;
}

const RELAY = join(repoRoot(), "shared/internal/lab/forward_relay.ts");

async function readLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    for (let i = rest.indexOf("\n"); i >= 0; i = rest.indexOf("\n")) {
      onLine(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  }
}

/**
 * Forwards `hostname:localPort` (this namespace) to `remote` (`<host>:<port>`) inside network
 * namespace `netns`. Needs root (`ip netns exec`).
 *
 * @throws Error naming the address when the local port cannot be bound, or the namespace and the
 *   relay's message when the relay does not start
 */
export async function openPortForward(
  netns: string,
  remote: string,
  options: PortForwardOptions = {},
): Promise<PortForward> {
  parseHostPort(remote);
  const hostname = options.hostname ?? "127.0.0.1";
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port: options.localPort ?? 0 });
  } catch (e) {
    throw new Error(`cannot listen on ${hostname}:${options.localPort ?? 0}: ${(e as Error).message}`);
  }
  const dir = await Deno.makeTempDir({ prefix: "lab-forward-" });
  const socket = join(dir, "relay.sock");
  const relay = new Deno.Command("ip", {
    args: [
      "netns",
      "exec",
      netns,
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-net",
      RELAY,
      socket,
      remote,
    ],
    cwd: repoRoot(),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdin = relay.stdin.getWriter();
  const stderrLines: string[] = [];
  let ready!: () => void;
  const started = new Promise<void>((r) => (ready = r));
  const stdoutDone = readLine(relay.stdout, (l) => l === "ready" && ready());
  const stderrDone = readLine(relay.stderr, (l) => {
    stderrLines.push(l);
    options.onError?.(`${netns}: ${l}`);
  });
  const cleanup = async () => {
    try {
      listener.close();
    } catch {
      // closed already
    }
    await stdin.close().catch(() => {});
    await relay.status;
    await Promise.all([stdoutDone, stderrDone]).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    started.then(() => "ready"),
    relay.status.then((s) => `exited with code ${s.code}`),
    new Promise<string>((
      r,
    ) => (timer = setTimeout(() => r("did not start"), options.startTimeoutMs ?? 15_000))),
  ]);
  clearTimeout(timer);
  if (outcome !== "ready") {
    if (outcome === "did not start") relay.kill("SIGKILL");
    await cleanup();
    throw new Error(
      `port-forward to ${remote} in network namespace ${netns}: the relay ${outcome}` +
        (stderrLines.length > 0 ? `: ${stderrLines.join("; ").slice(0, 500)}` : ""),
    );
  }
  const open = new Set<Deno.Conn>();
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        options.onConnection?.();
        open.add(conn);
        Deno.connect({ transport: "unix", path: socket }).then(
          (upstream) => pipeConnections(conn, upstream),
          () => conn.close(),
        ).finally(() => open.delete(conn));
      }
    } catch {
      // the listener was closed
    }
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    localAddress: `${hostname}:${port}`,
    localPort: port,
    remote,
    netns,
    close: async () => {
      await cleanup();
      await accepting;
      for (const c of open) {
        try {
          c.close();
        } catch {
          // closed already
        }
      }
    },
  };
}
