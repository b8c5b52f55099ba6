/**
 * A loopback HTTP CONNECT tunnel that lets Deno's fetch verify meshd's certificate against a fixed
 * name (`--discoveryServerName`, e.g. `meshd.mesh-system.svc`) while dialling an IP address or another
 * host: grpc-js did this with `grpc.ssl_target_name_override`; fetch checks the URL's host and has no
 * override. The agent's fetch client asks for `https://<serverName>:<port>` through this tunnel (the
 * client's `proxy` option), the tunnel connects the bytes to the real address, and TLS runs end to end
 * between fetch (rustls) and meshd: SNI and the certificate check are for `serverName`, against the
 * configured roots only. A certificate without the name is refused (proxy/agent tests, "wrong name").
 *
 * The tunnel only serves its own client: it listens on 127.0.0.1 with a random port, requires a
 * random Proxy-Authorization that only its client knows, and connects only to the one target it was
 * made for (any other CONNECT is refused with 403), so another local process cannot use it to reach
 * anything. One tunnel per channel; closed with it.
 *
 * @module
 */
import { hostOf } from "../../shared/internal/tls/meshd_roots.ts";

/** A running tunnel. */
export interface ServerNameTunnel {
  /** The fetch client's `proxy` option. */
  proxy: Deno.Proxy;
  /** Stops listening and closes every tunnelled connection. */
  close(): void;
}

const MAX_HEAD_BYTES = 8192;
const encoder = new TextEncoder();

/**
 * Starts a tunnel to `address` (`host:port`) for CONNECTs to `target` (`serverName:port`).
 *
 * @throws Error when no loopback port can be bound
 */
export function startServerNameTunnel(address: string, target: string): ServerNameTunnel {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const username = "agent";
  const password = crypto.randomUUID();
  const expected = `Basic ${btoa(`${username}:${password}`)}`;
  const open = new Set<Deno.Conn>();
  const upstream = { hostname: hostOf(address), port: Number(/:(\d+)$/.exec(address)?.[1]) };
  let closed = false;

  const serve = async (conn: Deno.Conn): Promise<void> => {
    open.add(conn);
    let up: Deno.Conn | undefined;
    try {
      const head = await readHead(conn);
      const line = /^CONNECT (\S+) HTTP\/1\.1\r\n/.exec(head ?? "");
      const auth = /\r\nProxy-Authorization: ([^\r]+)\r\n/i.exec(head ?? "")?.[1];
      if (!line || line[1] !== target || auth !== expected) {
        await conn.write(encoder.encode("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")).catch(
          () => {},
        );
        return;
      }
      try {
        up = await Deno.connect(upstream);
      } catch (e) {
        const text = `HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nx-reason: ${
          (e as Error).name
        }\r\n\r\n`;
        await conn.write(encoder.encode(text)).catch(() => {});
        return;
      }
      open.add(up);
      await conn.write(encoder.encode("HTTP/1.1 200 Connection established\r\n\r\n"));
      await Promise.all([copy(conn, up), copy(up, conn)]);
    } catch {
      // A peer went away: both sides are closed below.
    } finally {
      for (const c of [conn, up]) {
        if (c && open.delete(c)) c.close();
      }
    }
  };

  void (async () => {
    try {
      for await (const conn of listener) {
        if (closed) conn.close();
        else void serve(conn);
      }
    } catch {
      // The listener was closed.
    }
  })();

  return {
    proxy: {
      url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
      basicAuth: { username, password },
    },
    close() {
      if (closed) return;
      closed = true;
      listener.close();
      for (const c of open) c.close();
      open.clear();
    },
  };
}

/** Reads the CONNECT head (up to the blank line); undefined when it is too long or the peer left. */
async function readHead(conn: Deno.Conn): Promise<string | undefined> {
  const buf = new Uint8Array(MAX_HEAD_BYTES);
  let used = 0;
  while (used < buf.length) {
    const n = await conn.read(buf.subarray(used));
    if (n === null) return undefined;
    used += n;
    const text = new TextDecoder().decode(buf.subarray(0, used));
    // fetch sends nothing after the head until it has the 200, so the head is all there is.
    if (text.endsWith("\r\n\r\n")) return text;
  }
  return undefined;
}

/** Copies until EOF, then half-closes the destination. */
async function copy(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  while (true) {
    const n = await from.read(buf);
    if (n === null) break;
    let off = 0;
    while (off < n) off += await to.write(buf.subarray(off, n));
  }
  await to.closeWrite().catch(() => {});
}
