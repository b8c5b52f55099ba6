/**
 * The half of a lab port-forward that runs inside the target's network namespace (started by
 * port_forward.ts with `ip netns exec <netns> deno run forward_relay.ts <socket> <host:port>`): it
 * listens on a Unix socket, which, being a file, is reachable from the host's network namespace too,
 * and relays each connection to `<host>:<port>` in its own namespace. It prints `ready` once
 * listening, reports each failed dial on stderr (one line), and exits when its standard input closes,
 * so it never outlives the process that forwards (even one killed by SIGKILL).
 *
 * Deno cannot enter another network namespace itself, so one process per forward stays inside; what
 * kubelet did with `nsenter` and `socat` per connection, without socat or a process per connection.
 *
 * @module
 */

const BUFFER_BYTES = 64 * 1024;

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch {
    // closed already
  }
}

/** Copies until end of stream (then half-closes `to`); on an error closes both, ending the other way too. */
async function copy(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(BUFFER_BYTES);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      for (let done = 0; done < n;) done += await to.write(buf.subarray(done, n));
    }
    // Half-close: an HTTP client that ends its request still waits for the answer.
    await to.closeWrite();
  } catch {
    closeQuietly(from);
    closeQuietly(to);
  }
}

/**
 * Relays bytes both ways between two connections until both directions end, passing each end of
 * stream on as a half-close, then closes both.
 */
export async function pipeConnections(a: Deno.Conn, b: Deno.Conn): Promise<void> {
  await Promise.all([copy(a, b), copy(b, a)]);
  closeQuietly(a);
  closeQuietly(b);
}

/** `<host>:<port>` → its parts. @throws Error naming the value */
export function parseHostPort(text: string): { hostname: string; port: number } {
  const i = text.lastIndexOf(":");
  const port = Number(text.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`${JSON.stringify(text)}: expected <host>:<port> with a port from 1 to 65535`);
  }
  return { hostname: text.slice(0, i), port };
}

/**
 * Listens on the Unix socket `path` and relays each connection to `remote` (`host:port`) until
 * `signal` aborts.
 *
 * @param onDialError called with a line naming the remote and the reason when a dial fails
 */
export async function relayUnixToTcp(
  path: string,
  remote: string,
  options: { signal: AbortSignal; onReady?: () => void; onDialError?: (line: string) => void },
): Promise<void> {
  const target = parseHostPort(remote);
  const listener = Deno.listen({ transport: "unix", path });
  options.signal.addEventListener("abort", () => listener.close(), { once: true });
  options.onReady?.();
  const handle = async (conn: Deno.Conn) => {
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect(target);
    } catch (e) {
      options.onDialError?.(`cannot connect to ${remote}: ${(e as Error).message}`);
      conn.close();
      return;
    }
    await pipeConnections(conn, upstream);
  };
  try {
    for await (const conn of listener) handle(conn);
  } catch (e) {
    if (!options.signal.aborted) throw e;
  }
}

if (import.meta.main) {
  const [path, remote] = Deno.args;
  const stop = new AbortController();
  const encoder = new TextEncoder();
  (async () => {
    for await (const _ of Deno.stdin.readable) {
      // nothing is sent: the stream only tells that the forwarding process is alive
    }
    stop.abort();
  })();
  await relayUnixToTcp(path, remote, {
    signal: stop.signal,
    onReady: () => Deno.stdout.writeSync(encoder.encode("ready\n")),
    onDialError: (line) => Deno.stderr.writeSync(encoder.encode(line + "\n")),
  });
  Deno.exit(0);
}
