/**
 * The Deno-TLS floor of the proxy pair bench: a minimal TLS pass-through on Deno's own sockets, one side
 * per process, no HTTP and no policy (issue 17 item 5).
 *
 * - `client`: plain TCP in (`Deno.listen`), `Deno.connectTls` out with a client certificate, the
 *   peer's chain verified against the CA file (no host name check: the mesh's certificates carry a
 *   SPIFFE URI, not a DNS name);
 * - `server`: `Deno.listenTls` in, plain TCP out to the app (`Deno.connect`). Deno's TLS server cannot
 *   request or verify a client certificate (denoland/deno#26825, /work/shared/platform.md), so this
 *   side does NOT verify the client: this floor is cheaper than any mutual-TLS server can be.
 *
 * Each direction is a read/write loop with its own 64 KiB buffer; when one direction ends or fails,
 * both connections are closed.
 *
 * Run: deno run --allow-net --allow-read deno_tls_pipe.ts client|server <listen port> <upstream port>
 *   <cert file> <key file> <CA file>   (everything on 127.0.0.1)
 *
 * @module
 */
import { pipeArgs } from "./pipe_args.ts";

const { role, listen, upstream, cert, key, ca } = pipeArgs("deno_tls_pipe.ts", Deno.args);
const HOST = "127.0.0.1";

async function oneWay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  for (;;) {
    const n = await from.read(buf);
    if (n === null) return;
    for (let off = 0; off < n;) off += await to.write(buf.subarray(off, n));
  }
}

async function relay(down: Deno.Conn, connectUp: () => Promise<Deno.Conn>): Promise<void> {
  let up: Deno.Conn | undefined;
  try {
    up = await connectUp();
    await Promise.race([oneWay(down, up), oneWay(up, down)]);
  } catch {
    // A peer went away: close both below.
  } finally {
    for (const c of [down, up]) {
      try {
        c?.close();
      } catch {
        // Already closed.
      }
    }
  }
}

if (role === "client") {
  for await (const down of Deno.listen({ hostname: HOST, port: listen })) {
    down.setNoDelay(true);
    relay(down, () =>
      Deno.connectTls({
        hostname: HOST,
        port: upstream,
        caCerts: [ca],
        cert,
        key,
        unsafelyDisableHostnameVerification: true,
      }));
  }
} else {
  for await (const down of Deno.listenTls({ hostname: HOST, port: listen, cert, key })) {
    relay(down, async () => {
      const up = await Deno.connect({ hostname: HOST, port: upstream });
      up.setNoDelay(true);
      return up;
    });
  }
}
