/**
 * The TLS end of the agent's gRPC-over-fetch channels: a loopback SOCKS5 tunnel that fetch's HTTP client
 * uses as its proxy (`socks5h://`), and that opens the mutual-TLS connection to meshd itself with
 * node:tls, trusting ONLY the configured roots. Deno's `fetch` cannot be used for the TLS itself:
 * `Deno.createHttpClient({caCerts})` trusts those roots in addition to the process's default store
 * (Mozilla's, or the system's with DENO_TLS_CA_STORE=system), so a certificate from any public CA for the
 * dialled name would pass (measured: proxy/agent/README.md), and it has no server-name override. node:tls
 * with `ca` trusts exactly `ca`, as grpc-js did. So fetch speaks HTTP/2 in plain text to this tunnel over
 * loopback, and the tunnel carries it inside TLS to meshd.
 *
 * Server identity, as shared/internal/tls/meshd_channel.ts gives grpc-js: with `serverName` meshd's
 * certificate must carry that name (DNS SAN) whatever address is dialled; without it the dialled host
 * (a DNS name, or an IP against the certificate's IP SANs; Deno's node:tls refuses an IP as SNI, so the
 * SNI is then a placeholder and the IP is checked by checkServerIdentity). ALPN h2, as meshd requires.
 *
 * The tunnel serves only its own client: it listens on 127.0.0.1 with a random port, requires SOCKS5
 * username/password authentication with a random password only its client knows, and connects only to
 * the one target it was made for (anything else is refused), so another local process can neither use
 * the workload's certificate through it nor reach anything else. One tunnel per channel; closed with it.
 *
 * @module
 */
import { isIP } from "node:net";
import * as tls from "node:tls";
import { hostOf } from "../../shared/internal/tls/meshd_roots.ts";

/** The SNI sent when an IP address is dialled without a server name (meshd ignores SNI). */
export const IP_TARGET_SNI = "meshd";

/** What the tunnel connects to and how it verifies it. */
export interface TlsTarget {
  /** meshd's `host:port`. */
  address: string;
  /** PEM roots meshd's certificate must chain to: the only ones trusted. */
  rootsPem: string;
  /** The workload certificate to present. */
  clientCertificate?: { certChainPem: string; privateKeyPem: string };
  /** The name meshd's certificate must carry; default the dialled host. */
  serverName?: string;
}

/** A running tunnel. */
export interface TlsTunnel {
  /** The fetch client's `proxy` option. */
  proxy: Deno.Proxy;
  /** The host:port to put in request URLs (`http://<authority>/...`): the name meshd is checked against. */
  authority: string;
  /** Why the last connection to meshd failed (a TLS or connect error), for error messages. */
  lastError(): string | undefined;
  /** Stops listening and closes every tunnelled connection. */
  close(): void;
}

const USERNAME = "agent";

/**
 * Starts a tunnel for `target`.
 *
 * @throws Error when no loopback port can be bound
 */
export function startTlsTunnel(target: TlsTarget): TlsTunnel {
  const host = hostOf(target.address);
  const port = Number(/:(\d+)$/.exec(target.address)?.[1]);
  const name = target.serverName ?? host;
  const authority = `${name.includes(":") ? `[${name}]` : name}:${port}`;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const password = crypto.randomUUID();
  const open = new Set<{ close(): void }>();
  let lastError: string | undefined;
  let closed = false;

  const connectTls = (): Promise<tls.TLSSocket> =>
    new Promise((resolve, reject) => {
      const ipTarget = !target.serverName && isIP(host) !== 0;
      const socket = tls.connect({
        host,
        port,
        servername: ipTarget ? IP_TARGET_SNI : name,
        ca: target.rootsPem,
        cert: target.clientCertificate?.certChainPem,
        key: target.clientCertificate?.privateKeyPem,
        ALPNProtocols: ["h2"],
        rejectUnauthorized: true,
        ...(ipTarget
          ? {
            checkServerIdentity: (_n: string, peer: tls.PeerCertificate) =>
              tls.checkServerIdentity(host, peer),
          }
          : {}),
      });
      socket.once("secureConnect", () => resolve(socket));
      socket.once("error", reject);
    });

  const serve = async (conn: Deno.Conn): Promise<void> => {
    open.add(conn);
    let socket: tls.TLSSocket | undefined;
    try {
      const wanted = await socksHandshake(conn, password);
      if (wanted === undefined) return; // refused during the handshake
      if (canonical(wanted) !== canonical(authority)) {
        await conn.write(new Uint8Array([5, 2, 0, 1, 0, 0, 0, 0, 0, 0])).catch(() => {}); // not allowed
        return;
      }
      try {
        socket = await connectTls();
      } catch (e) {
        lastError = (e as Error).message;
        await conn.write(new Uint8Array([5, 5, 0, 1, 0, 0, 0, 0, 0, 0])).catch(() => {}); // refused
        return;
      }
      lastError = undefined;
      const s = socket;
      open.add({ close: () => s.destroy() });
      await writeAll(conn, new Uint8Array([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
      await relay(conn, s);
    } catch {
      // A peer went away: both sides are closed below.
    } finally {
      socket?.destroy();
      if (open.delete(conn)) conn.close();
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
      url: `socks5h://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
      basicAuth: { username: USERNAME, password },
    },
    authority,
    lastError: () => lastError,
    close() {
      if (closed) return;
      closed = true;
      listener.close();
      for (const c of open) c.close();
      open.clear();
    },
  };
}

/** `host:port` with an IPv6 host in its shortest form, so that the two spellings of one address compare equal. */
function canonical(authority: string): string {
  const m = /^(.*):(\d+)$/.exec(authority);
  if (!m) return authority;
  try {
    return `${new URL(`http://${m[1]}`).hostname}:${m[2]}`;
  } catch {
    return authority;
  }
}

/** Reads exactly `n` bytes. */
async function readExactly(conn: Deno.Conn, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let at = 0;
  while (at < n) {
    const got = await conn.read(out.subarray(at));
    if (got === null) throw new Error("the client left during the SOCKS handshake");
    at += got;
  }
  return out;
}

/**
 * The server side of a SOCKS5 handshake (RFC 1928) with username/password authentication (RFC 1929):
 * the CONNECT target as `host:port`, or undefined (after answering a refusal) when the client does
 * not authenticate with `password` or asks for anything but CONNECT.
 */
export async function socksHandshake(conn: Deno.Conn, password: string): Promise<string | undefined> {
  const [version, count] = await readExactly(conn, 2);
  const methods = await readExactly(conn, count);
  if (version !== 5 || !methods.includes(2)) {
    await conn.write(new Uint8Array([5, 0xff]));
    return undefined;
  }
  await conn.write(new Uint8Array([5, 2]));
  const [authVersion, userLength] = await readExactly(conn, 2);
  const user = new TextDecoder().decode(await readExactly(conn, userLength));
  const [passLength] = await readExactly(conn, 1);
  const pass = new TextDecoder().decode(await readExactly(conn, passLength));
  if (authVersion !== 1 || user !== USERNAME || pass !== password) {
    await conn.write(new Uint8Array([1, 1]));
    return undefined;
  }
  await conn.write(new Uint8Array([1, 0]));
  const [v, command, , addressType] = await readExactly(conn, 4);
  let host: string;
  if (addressType === 3) {
    const [length] = await readExactly(conn, 1);
    host = new TextDecoder().decode(await readExactly(conn, length));
  } else if (addressType === 1) {
    host = [...await readExactly(conn, 4)].join(".");
  } else if (addressType === 4) {
    const b = await readExactly(conn, 16);
    host = `[${[...Array(8)].map((_, i) => ((b[2 * i] << 8) | b[2 * i + 1]).toString(16)).join(":")}]`;
  } else {
    await conn.write(new Uint8Array([5, 8, 0, 1, 0, 0, 0, 0, 0, 0])); // address type not supported
    return undefined;
  }
  const p = await readExactly(conn, 2);
  if (v !== 5 || command !== 1) {
    await conn.write(new Uint8Array([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
    return undefined;
  }
  return `${host}:${(p[0] << 8) | p[1]}`;
}

/** Writes every byte (Deno.Conn.write may take fewer). */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

/** Copies both ways until either side ends. */
async function relay(conn: Deno.Conn, socket: tls.TLSSocket): Promise<void> {
  const done = Promise.withResolvers<void>();
  socket.on("data", (chunk: Uint8Array) => {
    socket.pause();
    writeAll(conn, chunk).then(() => socket.resume(), () => done.resolve());
  });
  socket.once("end", () => done.resolve());
  socket.once("close", () => done.resolve());
  socket.once("error", () => done.resolve());
  const upstream = (async () => {
    const buf = new Uint8Array(64 * 1024);
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      const chunk = buf.slice(0, n);
      if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r));
    }
  })().catch(() => {});
  await Promise.race([done.promise, upstream]);
}
