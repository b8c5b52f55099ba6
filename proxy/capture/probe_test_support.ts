/**
 * Test support, run as a program inside a network namespace: listens on 127.0.0.1:<port> and, when
 * the namespace has IPv6, [::1]:<port>; answers every connection with one JSON line, the
 * {@link originalDestination} of that connection, and closes it. Prints `ready` once listening.
 *
 *   deno run --allow-net [--allow-ffi=<libc>] proxy/capture/probe_test_support.ts <port> [v6]
 *
 * @module
 */
import net from "node:net";
import { originalDestination } from "./original_destination.ts";

function serve(host: string, port: number): Promise<void> {
  const server = net.createServer((socket) => {
    socket.on("error", () => {});
    socket.end(JSON.stringify(originalDestination(socket)) + "\n");
  });
  return new Promise((resolve) => server.listen(port, host, resolve));
}

if (import.meta.main) {
  const port = Number(Deno.args[0]);
  await serve("127.0.0.1", port);
  if (Deno.args[1] === "v6") await serve("::1", port);
  console.log("ready");
}
