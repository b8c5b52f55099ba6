/**
 * The node:tls floor of the proxy pair bench: a minimal mutual-TLS pass-through, one side per process,
 * no HTTP and no policy, so that the proxy's figures can be read against what Deno's node:tls itself
 * costs (issue 17 item 5).
 *
 * - `client`: plain TCP in (node:net), node:tls out with a client certificate, the peer's chain verified
 *   against the CA file (no host name check: the mesh's certificates carry a SPIFFE URI, not a DNS name;
 *   haproxy's `verify required` does the same);
 * - `server`: node:tls in, requiring a client certificate signed by the CA file (`requestCert` +
 *   `rejectUnauthorized`, as the proxy's inbound listener), plain TCP out to the app.
 *
 * Each direction is a read/write loop: every chunk read is written to the other side, reading pauses
 * while the other side's buffer is full (`write` false) and resumes on `drain`.
 *
 * Run: deno run --allow-net --allow-read node_tls_pipe.ts client|server <listen port> <upstream port>
 *   <cert file> <key file> <CA file>   (everything on 127.0.0.1)
 *
 * @module
 */
import net from "node:net";
import tls from "node:tls";
import { pipeArgs } from "./pipe_args.ts";

const { role, listen, upstream, cert, key, ca } = pipeArgs("node_tls_pipe.ts", Deno.args);
const HOST = "127.0.0.1";

/** Copies `from` into `to` until `from` ends; either side failing ends both. */
function oneWay(from: net.Socket, to: net.Socket): void {
  from.on("data", (chunk: Uint8Array) => {
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  from.on("end", () => to.end());
  from.on("error", () => to.destroy());
  from.on("close", () => to.destroy());
}

function relay(down: net.Socket, up: net.Socket): void {
  oneWay(down, up);
  oneWay(up, down);
}

if (role === "client") {
  net.createServer({ noDelay: true }, (down) => {
    const up = tls.connect({
      host: HOST,
      port: upstream,
      cert,
      key,
      ca,
      checkServerIdentity: () => undefined,
    });
    up.setNoDelay(true);
    relay(down, up);
  }).listen(listen, HOST);
} else {
  tls.createServer({ cert, key, ca, requestCert: true, rejectUnauthorized: true, noDelay: true }, (down) => {
    relay(down, net.connect({ host: HOST, port: upstream, noDelay: true }));
  }).listen(listen, HOST);
}
