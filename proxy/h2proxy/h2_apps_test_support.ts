/**
 * The real HTTP/2 software the proxy's HTTP/2 tests put on either side of it: Debian's python3-grpcio
 * (./grpc_test_app.py, server and client), nghttpd and nghttp (nghttp2-server, nghttp2-client),
 * python3-hypercorn with a small ASGI application that echoes what it received, and curl with
 * `--http2-prior-knowledge`. Every Python process runs with a clean environment (grpcio reads
 * `http_proxy`, `grpc_proxy` and `GRPC_*`; /work/shared/platform.md) and Debian's /usr/bin/python3.
 * Not used by the proxy itself.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import {
  commandMissing,
  type Missing,
  pythonModulesMissing,
} from "../../shared/internal/testing/prerequisites.ts";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";

const GRPC_APP = fileURLToPath(new URL("./grpc_test_app.py", import.meta.url));
const HOSTILE_APP = fileURLToPath(new URL("./hostile_h2_app.py", import.meta.url));
const CLEAN_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };

/** What the gRPC tests need, or undefined. */
export function grpcioMissing(): Missing {
  return pythonModulesMissing(["grpc"], "python3-grpcio");
}

/** What the h2c tests need (nghttpd, nghttp, hypercorn, curl), or undefined. */
export function h2cToolsMissing(): Missing {
  return commandMissing("nghttpd") ?? commandMissing("nghttp") ?? commandMissing("curl") ??
    pythonModulesMissing(["hypercorn"], "python3-hypercorn");
}

/** A server process on 127.0.0.1 that the test stops. */
export interface ServerProcess {
  port: number;
  stop(): Promise<void>;
}

/** Waits until something accepts TCP connections on the port (20 s at most). */
async function untilListening(port: number, child: Deno.ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      throw new Error(`${what} did not start on port ${port}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function spawnServer(cmd: string, args: string[], what: string, cwd?: string): Promise<ServerProcess> {
  const port = freePort();
  const child = new Deno.Command(cmd, {
    args: args.map((a) => a.replace("{port}", String(port))),
    cwd,
    clearEnv: true,
    env: CLEAN_ENV,
    stdout: "null",
    stderr: "null",
  }).spawn();
  await untilListening(port, child, what);
  let stopped: Promise<unknown> | undefined;
  return {
    port,
    async stop() {
      if (stopped === undefined) {
        child.kill("SIGTERM");
        stopped = child.status;
      }
      await stopped;
    },
  };
}

/** ./grpc_test_app.py's gRPC server (test.Echo: Unary, ServerStream, ClientStream, Bidi, Sleep, Metadata). */
export function startGrpcServer(): Promise<ServerProcess> {
  return spawnServer("/usr/bin/python3", [GRPC_APP, "server", "{port}"], "the grpcio server");
}

/** One scenario's outcome as ./grpc_test_app.py prints it. */
export interface GrpcOutcome {
  /** `OK` or the gRPC status name (`PERMISSION_DENIED`, ...). */
  code: string;
  details?: string;
  [key: string]: unknown;
}

/**
 * Runs ./grpc_test_app.py's client against `target` (host:port) with `:authority` `authority`.
 *
 * @param token a bearer token sent as `authorization` metadata on every call
 * @param caFile over TLS (SNI: `authority`'s host) trusting this PEM file; absent: h2c
 */
export async function grpcClient(
  target: string,
  authority: string,
  scenarios: string[],
  token?: string,
  caFile?: string,
): Promise<Record<string, GrpcOutcome>> {
  const deadline = processDeadline(60_000, `grpc client ${scenarios.join(" ")}`);
  const out = await new Deno.Command("/usr/bin/python3", {
    args: [
      GRPC_APP,
      "client",
      target,
      authority,
      ...(token ? [`--token=${token}`] : []),
      ...(caFile ? [`--ca=${caFile}`] : []),
      ...scenarios,
    ],
    clearEnv: true,
    env: CLEAN_ENV,
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
  }).output();
  deadline.end();
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`grpc client failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(stdout);
}

/** A gRPC message frame (uncompressed) of `text`. */
export function grpcFrame(text: string): Uint8Array {
  const body = new TextEncoder().encode(text);
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, body.length);
  out.set(body, 5);
  return out;
}

/**
 * A gRPC call by curl (`--http2-prior-knowledge`, `grpc-timeout` sent but not enforced by curl) to
 * `http://<target><path>` with `:authority` `authority` and the request body in `frameFile`: exit
 * code, `:status`, response headers and trailers (lower-case names), body size.
 */
export async function curlGrpc(
  target: string,
  authority: string,
  path: string,
  frameFile: string,
  grpcTimeout: string,
) {
  const r = await run("curl", [
    "-sS",
    "--http2-prior-knowledge",
    "--max-time",
    "15",
    "-D",
    "-",
    "-o",
    "/dev/null",
    "-w",
    "bytes=%{size_download}",
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    "-H",
    `grpc-timeout: ${grpcTimeout}`,
    "-H",
    `Host: ${authority}`,
    "--data-binary",
    `@${frameFile}`,
    `http://${target}${path}`,
  ]);
  const headers: Record<string, string> = {};
  for (const line of r.stdout.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0 && !line.startsWith("HTTP/")) {
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
  }
  return {
    code: r.code,
    stderr: r.stderr,
    status: /^HTTP\/2 (\d+)/.exec(r.stdout)?.[1],
    headers,
    bytes: Number(/bytes=(\d+)$/.exec(r.stdout)?.[1]),
  };
}

/** What the hostile-peer tests need (Debian's python3-h2), or undefined. */
export function pythonH2Missing(): Missing {
  return pythonModulesMissing(["h2"], "python3-h2");
}

/** ./hostile_h2_app.py's h2c application: GOAWAY, RST_STREAM before or during the response, by path. */
export function startHostileApp(): Promise<ServerProcess> {
  return spawnServer("/usr/bin/python3", [HOSTILE_APP, "server", "{port}"], "the hostile HTTP/2 application");
}

/** ./hostile_h2_app.py's rapid-reset client: `count` streams each reset at once; how the connection ended. */
export async function rapidReset(
  target: string,
  authority: string,
  count: number,
): Promise<{ sent: number; goaway: number | null; closed: boolean }> {
  const r = await run("/usr/bin/python3", [HOSTILE_APP, "rapid-reset", target, authority, String(count)]);
  if (r.code !== 0) throw new Error(`rapid-reset client failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * ./hostile_h2_app.py's stalled-body client: a POST to `path` whose body stops after 4 bytes; the
 * response it got (`status`, `body`), or the stream's reset code.
 */
export function stalledBody(target: string, authority: string, path: string): Promise<H2Outcome> {
  return h2Client(["stalled-body", target, authority, path]);
}

/** What ./hostile_h2_app.py's clients print: the response of their stream, or its reset code. */
export interface H2Outcome {
  status: number | null;
  body: string;
  reset?: number;
}

/**
 * ./hostile_h2_app.py's get client: one GET with prior knowledge, in mutual TLS without ALPN when
 * `tls` names the client certificate, key and CA files.
 */
export function h2Get(
  target: string,
  authority: string,
  path: string,
  tls: string[] = [],
): Promise<H2Outcome> {
  return h2Client(["get", target, authority, path, ...tls]);
}

async function h2Client(args: string[]): Promise<H2Outcome> {
  const r = await run("/usr/bin/python3", [HOSTILE_APP, ...args]);
  if (r.code !== 0) throw new Error(`${args[0]} client failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** nghttpd serving `dir` over h2c (`--no-tls`). */
export function startNghttpd(dir: string): Promise<ServerProcess> {
  return spawnServer("nghttpd", ["--no-tls", "-d", dir, "{port}"], "nghttpd");
}

/** The ASGI application hypercorn serves: it answers every request with what it received, as JSON. */
const ECHO_APP = `import json
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    size = 0
    while True:
        m = await receive()
        size += len(m.get("body", b""))
        if not m.get("more_body"):
            break
    out = json.dumps({"path": scope["path"], "query": scope["query_string"].decode(),
                      "http_version": scope["http_version"], "method": scope["method"],
                      "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
                      "body_bytes": size}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"x-echo", b"1")]})
    await send({"type": "http.response.body", "body": out})
`;

/** python3-hypercorn serving {@link ECHO_APP} (HTTP/1.1, and h2c with prior knowledge). */
export async function startHypercorn(dir: string): Promise<ServerProcess> {
  await Deno.writeTextFile(join(dir, "h2_echo_app.py"), ECHO_APP);
  return spawnServer(
    "/usr/bin/python3",
    ["-m", "hypercorn", "--bind", "127.0.0.1:{port}", "h2_echo_app:app"],
    "hypercorn",
    dir,
  );
}

/**
 * nghttp (`-n -s`) sending `count` concurrent requests for `path` on one connection to `address`
 * with `:authority` `authority`; its stdout (one statistics line per stream).
 */
export async function nghttpStreams(
  address: string,
  authority: string,
  path: string,
  count: number,
): Promise<string> {
  const r = await run("nghttp", [
    "-n",
    "-s",
    "-m",
    String(count),
    "-H",
    `:authority: ${authority}`,
    `http://${address}${path}`,
  ]);
  if (r.code !== 0) throw new Error(`nghttp failed: ${r.stderr}`);
  return r.stdout;
}

/** A command's exit code and output, run with a 30 s deadline. */
export async function run(
  cmd: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const deadline = processDeadline(30_000, `${cmd} ${args.join(" ")}`);
  const out = await new Deno.Command(cmd, {
    args,
    clearEnv: true,
    env: CLEAN_ENV,
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
  }).output();
  deadline.end();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
