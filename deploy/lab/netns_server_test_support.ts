/**
 * Test support (root): a fresh network namespace with its loopback up and a real HTTP server
 * (python3 -m http.server) on 127.0.0.1:<port> inside, for the port-forward tests.
 *
 * @module
 */
import { mustRun, run } from "./host.ts";

/** A namespace with a server in it. */
export interface NetnsServer {
  netns: string;
  /** The server's pid (the only process in the namespace before any forward). */
  pid: number;
  /** Ends the server and deletes the namespace. */
  remove(): Promise<void>;
}

/**
 * Makes namespace `netns` and starts the server on 127.0.0.1:`port` in it, serving `directory`;
 * resolves once it accepts connections.
 */
export async function netnsServer(netns: string, port: number, directory: string): Promise<NetnsServer> {
  await mustRun("ip", ["netns", "add", netns]);
  await mustRun("ip", ["-n", netns, "link", "set", "lo", "up"]);
  const server = new Deno.Command("ip", {
    args: [
      "netns",
      "exec",
      netns,
      "python3",
      "-m",
      "http.server",
      "--bind",
      "127.0.0.1",
      "--directory",
      directory,
      String(port),
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const up = () => run("ip", ["netns", "exec", netns, "bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/${port}`]);
  for (let i = 0; i < 100 && (await up()).code !== 0; i++) await new Promise((r) => setTimeout(r, 50));
  return {
    netns,
    pid: server.pid,
    remove: async () => {
      server.kill("SIGKILL");
      await server.status;
      await run("ip", ["netns", "del", netns]);
    },
  };
}
