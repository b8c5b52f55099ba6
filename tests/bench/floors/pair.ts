/**
 * Starts the proxy pair bench's floors (issue 17 item 5): a client pipe and a server pipe of one kind,
 * each its own process with the proxy's `--v8-flags`, certificates from the bench's CA.
 *
 * - `node_tls` ([node_tls_pipe.ts](node_tls_pipe.ts)): node:tls both sides; the server side requires
 *   and verifies the client certificate against the mesh root, as the proxy does.
 * - `deno_tls` ([deno_tls_pipe.ts](deno_tls_pipe.ts)): Deno.connectTls / Deno.listenTls; the server side
 *   cannot verify the client (denoland/deno#26825).
 *
 * @module
 */
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type BenchRun, type Child, leafFiles, type MeshPair } from "../pair_support.ts";

/** The floors, by the name the bench reports them under. */
export const FLOOR_KINDS = ["node_tls", "deno_tls"] as const;
/** One floor kind. */
export type FloorKind = typeof FLOOR_KINDS[number];

const PROGRAMS: Record<FloorKind, string> = {
  node_tls: new URL("./node_tls_pipe.ts", import.meta.url).pathname,
  deno_tls: new URL("./deno_tls_pipe.ts", import.meta.url).pathname,
};

/** A started floor pair: plain bytes sent to `clientPort` come out at the app, through TLS between the two. */
export interface FloorPair {
  client: Child;
  server: Child;
  /** The client pipe's plain port on 127.0.0.1. */
  clientPort: number;
  /** The server pipe's TLS port on 127.0.0.1. */
  serverPort: number;
}

/**
 * Starts the `kind` floor in front of `appPort` (127.0.0.1): certificates SPIFFE `foo/app` (server) and
 * `foo/sleep` (client) from `ca`, `rootPem` the trust file; both processes killed by `bench.close()`.
 * Resolves once both ports accept connections.
 *
 * @throws Error naming the floor and its stderr when a side does not listen within 15 s
 */
export async function startFloorPair(
  bench: BenchRun,
  kind: FloorKind,
  options: { ca: MeshPair["ca"]; rootPem: string; appPort: number; v8Flags: string },
): Promise<FloorPair> {
  const serverLeaf = await leafFiles(bench, options.ca, `${kind}-server`, "app");
  const clientLeaf = await leafFiles(bench, options.ca, `${kind}-client`, "sleep");
  const serverPort = freePort();
  const clientPort = freePort();
  const start = (role: string, listen: number, upstream: number, leaf: typeof serverLeaf) =>
    bench.spawn(Deno.execPath(), [
      "run",
      "--allow-net",
      "--allow-read",
      ...(options.v8Flags ? [`--v8-flags=${options.v8Flags}`] : []),
      PROGRAMS[kind],
      role,
      String(listen),
      String(upstream),
      leaf.cert,
      leaf.key,
      options.rootPem,
    ], { NO_COLOR: "1" });
  const server = start("server", serverPort, options.appPort, serverLeaf);
  const client = start("client", clientPort, serverPort, clientLeaf);
  await waitListening(serverPort, `${kind} server pipe`, server);
  await waitListening(clientPort, `${kind} client pipe`, client);
  return { client, server, clientPort, serverPort };
}

async function waitListening(port: number, what: string, child: Child): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${what} not listening on ${port}: ${child.tail}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
