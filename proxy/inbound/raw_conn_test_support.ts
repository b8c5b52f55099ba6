/**
 * A plain or TLS connection speaking HTTP/1.1 by hand, for the proxy's raw-bytes tests (keep-alive,
 * malformed input, certificate rotation). Tests import it through test_support.ts.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { MESH_HTTP1_ALPN } from "../tls/mesh_alpn.ts";

/** A parsed HTTP/1.1 response read by {@link RawConn}. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A plain or TLS connection speaking HTTP/1.1 by hand (node sockets), for keep-alive, malformed
 * input and certificate rotation tests. Understands Content-Length and chunked responses.
 */
export class RawConn {
  #buf = Buffer.alloc(0);
  #ended = false;
  #waiters: (() => void)[] = [];
  constructor(readonly socket: net.Socket) {
    socket.on("data", (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#wake();
    });
    socket.on("end", () => {
      this.#ended = true;
      this.#wake();
    });
    socket.on("close", () => {
      this.#ended = true;
      this.#wake();
    });
    socket.on("error", () => {
      this.#ended = true;
      this.#wake();
    });
  }

  /** @param connect node's connect options besides the port: `host` (default 127.0.0.1), `localAddress`, ... */
  static plain(port: number, connect: Omit<net.TcpNetConnectOpts, "port"> = {}): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", ...connect, port }, () => resolve(new RawConn(s)));
      s.once("error", reject);
    });
  }

  /** A TLS client offering `opts.alpn` (a mesh sidecar's HTTP/1.1 ALPN by default: ../tls/mesh_alpn.ts). */
  static tls(
    port: number,
    opts: { ca: string; cert?: string; key?: string; alpn?: readonly string[] },
  ): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const alpn = [...(opts.alpn ?? MESH_HTTP1_ALPN)];
      const s = tls.connect(
        { host: "127.0.0.1", port, ca: opts.ca, cert: opts.cert, key: opts.key, ALPNProtocols: alpn },
        () => resolve(new RawConn(s)),
      );
      s.once("error", reject);
    });
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  get ended(): boolean {
    return this.#ended;
  }

  write(data: string | Uint8Array): void {
    this.socket.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
  }

  async #more(deadline: number): Promise<boolean> {
    if (this.#ended) return false;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error("timed out waiting for the response");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
      timer = setTimeout(resolve, left);
    });
    clearTimeout(timer);
    return true;
  }

  /** Reads one response; `head` for a response to HEAD. */
  async response(opts: { head?: boolean; timeoutMs?: number } = {}): Promise<RawResponse> {
    const deadline = Date.now() + (opts.timeoutMs ?? 5000);
    let end: number;
    while ((end = this.#buf.indexOf("\r\n\r\n")) < 0) {
      if (!await this.#more(deadline)) throw new Error(`connection ended before a response: ${this.#buf}`);
    }
    const lines = this.#buf.subarray(0, end).toString("latin1").split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      const name = line.slice(0, i).toLowerCase();
      headers[name] = headers[name] === undefined
        ? line.slice(i + 1).trim()
        : `${headers[name]}, ${line.slice(i + 1).trim()}`;
    }
    let rest = this.#buf.subarray(end + 4);
    let body = "";
    if (opts.head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
      // no body
    } else if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) {
      for (;;) {
        const text = rest.toString("latin1");
        const m = /^([0-9a-fA-F]+)[^\r]*\r\n/.exec(text);
        if (m) {
          const size = parseInt(m[1], 16);
          if (size === 0) {
            const fin = text.indexOf("\r\n\r\n", m[0].length - 2);
            if (fin >= 0) {
              rest = rest.subarray(fin + 4);
              break;
            }
          } else if (text.length >= m[0].length + size + 2) {
            body += text.slice(m[0].length, m[0].length + size);
            rest = rest.subarray(m[0].length + size + 2);
            continue;
          }
        }
        this.#buf = rest;
        if (!await this.#more(deadline)) throw new Error("connection ended inside a chunked body");
        rest = this.#buf;
      }
    } else if (headers["content-length"] !== undefined) {
      const n = Number(headers["content-length"]);
      while (rest.length < n) {
        this.#buf = rest;
        if (!await this.#more(deadline)) throw new Error("connection ended inside a body");
        rest = this.#buf;
      }
      body = rest.subarray(0, n).toString("latin1");
      rest = rest.subarray(n);
    } else {
      this.#buf = rest;
      while (await this.#more(deadline)) { /* until close */ }
      body = this.#buf.toString("latin1");
      rest = Buffer.alloc(0);
    }
    this.#buf = rest;
    return { status, headers, body };
  }

  /** Reads exactly `n` raw bytes (after any response read so far). */
  async bytes(n: number, timeoutMs = 5000): Promise<Uint8Array> {
    const deadline = Date.now() + timeoutMs;
    while (this.#buf.length < n) {
      if (!await this.#more(deadline)) throw new Error("connection ended");
    }
    const out = new Uint8Array(this.#buf.subarray(0, n));
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** Waits until the peer closes; true if it did within the time. */
  async closed(timeoutMs = 3000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    try {
      while (await this.#more(deadline)) { /* wait */ }
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.socket.destroy();
  }
}
